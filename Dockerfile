# The image the Kubernetes manifests run (ghcr.io/tally-dev/tally):
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/tally-dev/tally:latest .
#
# DuckDB is C++ linked through cgo, so the binary needs glibc and libstdc++
# at run time: it is built on Debian bookworm and runs on bookworm-slim, the
# same C library, rather than on a static or musl base it would not start on.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN VERSION="$VERSION" COMMIT="$COMMIT" scripts/build /out/tally && /out/tally version

FROM debian:bookworm-slim
# ca-certificates: the interface is HTTPS and Tally verifies its certificate.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 tally \
 && useradd --system --uid 65532 --gid 65532 --home-dir /var/lib/tally --create-home tally
# tally-lake beside tally, where tally finds it (export format iceberg).
COPY --from=build /out/tally /out/tally-lake /usr/local/bin/
# The uid the manifests' securityContext names; /var/lib/tally is their data
# volume and the working folder, so relative store and report paths land there.
USER 65532:65532
WORKDIR /var/lib/tally
ENTRYPOINT ["/usr/local/bin/tally"]
CMD ["--help"]
