# syntax=docker/dockerfile:1
# Build stage: production dependencies only (better-sqlite3 may compile, hence the toolchain).
FROM node:20-bookworm-slim AS dependencies
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# Runtime stage: no compiler, no dev dependencies, a non-root user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    HTTP_PORT=8080 \
    ADMIN_PORT=9464
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY schemas ./schemas
COPY projections ./projections
COPY src ./src
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:'+process.env.ADMIN_PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "--import", "tsx", "src/main.ts"]
CMD ["serve"]
