# syntax=docker/dockerfile:1
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The image runs on its base image's Node: the Node package the project brings for checkouts
# (an optional dependency) stays out.
RUN npm ci --no-audit --no-fund --omit=optional
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
COPY scripts ./scripts
COPY console ./console
COPY test/simulator ./test/simulator
RUN npm run build && npm prune --omit=dev --omit=optional

FROM node:24-bookworm-slim
# The commit the image was built from, shown by gateway_build_info (`docker build --build-arg GATEWAY_COMMIT=$(git rev-parse --short HEAD)`).
ARG GATEWAY_COMMIT
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 DATA_DIR=/data GATEWAY_COMMIT=${GATEWAY_COMMIT}
# glibc's allocator: two arenas, and blocks of 128 KiB or more (request bodies) mapped on their
# own so that freeing one gives its memory back (docs/operations.md "Memory").
ENV GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072
WORKDIR /app
RUN mkdir -p /data && chown node:node /data
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/package.json ./package.json
# The admin command on PATH (`docker exec <container> gateway-admin keys list`): package.json's
# bin, linked while still root. tsc writes files without the execute bit.
RUN ln -s /app/dist/scripts/admin.js /usr/local/bin/gateway-admin && chmod +x /app/dist/scripts/admin.js
USER node
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
