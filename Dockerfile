# One image for fleetfit-hub, fleetfit-agent and the fleetfit CLI:
#   docker build -t fleetfit:dev .
#   docker run fleetfit:dev                      # fleetfit-hub (the entrypoint)
#   docker run --entrypoint fleetfit-agent fleetfit:dev --help
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/fleetfit/fleetfit/pkg/version.gitVersion=${VERSION}" \
      -o /out/ ./cmd/fleetfit-hub ./cmd/fleetfit-agent ./cmd/fleetfit

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/fleetfit-hub"]
