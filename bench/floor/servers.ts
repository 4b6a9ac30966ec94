/**
 * The floor's two servers around the same answers (`answers.ts`): a bare `node:http` server, and
 * the same handler inside a Fastify instance with no plugin and no logger (Fastify-bare), so that
 * what Fastify itself costs is the difference between the two.
 */
import { createServer, type Server } from 'node:http';
import { parse } from 'node:querystring';
import Fastify, { type FastifyInstance } from 'fastify';
import { apiPrefix, type FloorAnswer, type FloorAnswers, type Query } from './answers.js';

export type FloorKind = 'floor' | 'fastify-bare';
export const floorKinds: readonly FloorKind[] = ['floor', 'fastify-bare'];

const jsonType = 'application/json; charset=utf-8';
const ordersPath = `${apiPrefix}/orders`;
const articlesPath = /^\/api\/external-api\/v1\/orders\/([^/]+)\/articles$/;

/** A path parameter as Fastify's router gives it: percent-decoded. */
function decoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The bare server: one function routes, answers and writes. */
export function nodeFloorServer(answers: FloorAnswers): Server {
  return createServer((request, response) => {
    const url = request.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const authorization = request.headers.authorization;
    let answer: FloorAnswer;
    if (request.method !== 'GET') answer = answers.noRoute(authorization, request.method ?? 'GET', path);
    else if (path === ordersPath)
      answer = answers.orders(authorization, mark === -1 ? {} : parse(url.slice(mark + 1)));
    else {
      const id = articlesPath.exec(path)?.[1];
      answer =
        id === undefined
          ? answers.noRoute(authorization, request.method, path)
          : answers.articles(authorization, decoded(id));
    }
    response.statusCode = answer.status;
    response.setHeader('content-type', jsonType);
    response.setHeader('content-length', Buffer.byteLength(answer.body));
    for (const name in answer.headers) response.setHeader(name, answer.headers[name]!);
    response.end(answer.body);
  });
}

/** The same answers in Fastify: its router, its request and reply objects, nothing registered. */
export function fastifyBareServer(answers: FloorAnswers): FastifyInstance {
  // the service's router limit on a path parameter (`httpLimits.maxParamLength`)
  const app = Fastify({ logger: false, routerOptions: { maxParamLength: 200 } });
  app.get<{ Querystring: Query }>(ordersPath, (request, reply) => {
    const answer = answers.orders(request.headers.authorization, request.query);
    void reply.code(answer.status).headers(answer.headers).type(jsonType).send(answer.body);
  });
  app.get<{ Params: { id: string } }>(`${ordersPath}/:id/articles`, (request, reply) => {
    const answer = answers.articles(request.headers.authorization, request.params.id);
    void reply.code(answer.status).headers(answer.headers).type(jsonType).send(answer.body);
  });
  app.setNotFoundHandler((request, reply) => {
    const answer = answers.noRoute(
      request.headers.authorization,
      request.method,
      request.url.split('?')[0] ?? '',
    );
    void reply.code(answer.status).headers(answer.headers).type(jsonType).send(answer.body);
  });
  return app;
}
