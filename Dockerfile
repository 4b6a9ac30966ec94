# syntax=docker/dockerfile:1
# Build stage: every dependency, TypeScript compiled to dist/.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/check-node.cjs ./scripts/check-node.cjs
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY schemas ./schemas
COPY projections ./projections
COPY src ./src
RUN npm run build

# Production dependencies only (better-sqlite3 ships a prebuilt N-API binary; kafkajs is patched on install).
FROM node:24-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/check-node.cjs ./scripts/check-node.cjs
RUN npm ci --omit=dev --no-audit --no-fund

# Runtime stage: plain JavaScript, no TypeScript transpiler, no dev dependencies, a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    HTTP_PORT=8080 \
    ADMIN_PORT=9464
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY scripts/check-node.cjs ./scripts/check-node.cjs
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:'+process.env.ADMIN_PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "--require", "./scripts/check-node.cjs", "--max-semi-space-size=4", "dist/src/main.js"]
CMD ["serve"]
