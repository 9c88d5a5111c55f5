# syntax=docker/dockerfile:1
# The Platform API image, the one the Helm chart (charts/platform) runs.
#
#   docker build -t platform-api:0.2.0 .
#   docker run --rm -p 3000:3000 -v platform-data:/app/data platform-api:0.2.0
#   docker run --rm -e DATABASE_URL=mysql://… platform-api:0.2.0 node dist/src/cli/main.js migrate
#
# Node.js 24 (LTS), Debian 13 slim. Pinned by tag and by digest: the tag says what it is, the
# digest makes the build reproducible (the digest as published for this tag and recorded by other
# public builds of it; confirm or renew with `docker buildx imagetools inspect node:24.21.0-trixie-slim`).
# Update both together, and package.json's engines with them.
FROM node:24.21.0-trixie-slim@sha256:8ec5d7557396cfe32d21c3f9c13072355ceab22b584578ca4bb28af31120cffe AS base
WORKDIR /app

# Production dependencies only. better-sqlite3 installs a prebuilt binary for this platform, or
# compiles one with the tools installed here; the compiled module is copied to the final stage,
# which has the same base, and the tools stay behind.
FROM base AS production-dependencies
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund

# The TypeScript build. Install scripts are not needed to compile (no native module is loaded).
FROM base AS build
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
COPY adapters ./adapters
COPY policies ./policies
RUN npm run build

FROM base AS runtime
# The service needs no package manager at run time: npm, npx, corepack and yarn go, and with them
# their own dependencies. The account the service runs as owns nothing but its data directory.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
        /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
    && groupadd --system --gid 10001 platform \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin platform \
    && mkdir -p /app/data \
    && chown 10001:10001 /app/data \
    && chmod 0700 /app/data
ENV NODE_ENV=production \
    PORT=3000
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The embedded SQLite default writes ./data/platform.sqlite (and its WAL) under /app/data: mount a
# volume there to keep it. Nothing else is written outside /tmp, so the root file system can be
# read-only. With MySQL or MariaDB (DATABASE_URL=mysql://…) nothing is written at all.
VOLUME ["/app/data"]
USER 10001:10001
EXPOSE 3000
# No curl in a slim image: node asks /healthz itself (liveness; HOST must accept loopback).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is the process: SIGTERM reaches the service's own shutdown handler.
# Migrations as their own command: node dist/src/cli/main.js migrate
CMD ["node", "dist/src/main.js"]
