# care-mcp's image: the care-mcp binary, linked statically (scripts/build-binary), and the six
# role wrappers (links to it: care-mcp serves the role its name says) in /usr/local/bin, the CA
# certificates the upstream clients trust, an nsswitch.conf (/etc/hosts before DNS) and a
# passwd entry for uid 65532. FROM scratch: no shell, no package manager, no shared library,
# nothing writable needed.
#
# From source (operators; needs the Rust image and crates.io):
#   podman build -t care-mcp .              (or docker build)
# From a binary built already (CI: no base image can be pulled there), into a context that
# holds only the assembled root filesystem:
#   scripts/image-rootfs target/release/care-mcp ctx/rootfs
#   podman build --build-arg ROOTFS=context -f Dockerfile -t care-mcp ctx
# The exact toolchain crates/server/hot-symbols.txt and hot-data.txt were made with: a Rust
# symbol (and a constant's section) carries a hash of its build, toolchain included, so under
# another patch release the layout lists miss and each role process holds more code (a build
# whose list matched half its names: 16-17 MiB resident against 10-11; README "How it got
# here").
ARG RUST_IMAGE=docker.io/library/rust:1.95.0-bookworm
# source: build care-mcp here; context: take ./rootfs from the build context as it is.
ARG ROOTFS=source

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Build settings (the allocator's arena size: .cargo/config.toml).
COPY .cargo .cargo
COPY crates crates
# Embedded into the binary by sqlx::migrate! (no sqlx query macros: no offline query data).
COPY migrations migrations
COPY scripts/build-binary scripts/image-rootfs scripts/
# Every crate from the lock file first; the build itself then runs offline.
RUN cargo fetch --locked
RUN scripts/build-binary --locked --offline
RUN scripts/image-rootfs target/release/care-mcp /rootfs

FROM scratch AS rootfs-source
COPY --from=build /rootfs/ /

FROM scratch AS rootfs-context
COPY rootfs/ /

FROM rootfs-${ROOTFS}
USER 65532:65532
# The agent harness (or `kubectl attach -i`) speaks MCP on stdin/stdout of a role wrapper:
# /usr/local/bin/care-mcp-<role>, arguments ignored. `care-mcp` alone needs --role.
ENTRYPOINT ["/usr/local/bin/care-mcp"]
