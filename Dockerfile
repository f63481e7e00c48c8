# syntax=docker/dockerfile:1
# toolgate: a static binary in a distroless image, running as a non-root user.
# The generated *_templ.go files are committed, so the build needs no templ step.
# Build: docker build --build-arg VERSION=$(git describe --always --dirty) -t toolgate .

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolgate ./cmd/toolgate \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolgate /toolgate
# TOOLGATE_DATA_DIR, writable by the nonroot user (uid 65532). The image has no
# PostgreSQL or Meilisearch: set DATABASE_URL, MEILI_URL and MEILI_MASTER_KEY.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV TOOLGATE_ADDR=0.0.0.0:8080 \
    TOOLGATE_DATA_DIR=/data
EXPOSE 8080
ENTRYPOINT ["/toolgate"]
CMD ["serve"]
