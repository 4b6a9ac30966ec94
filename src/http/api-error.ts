import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { ErrorBody } from '../../schemas/api.js';

/** An expected failure answered with the Error object (`error`, `message`). */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly error: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: this.error, message: this.message };
  }
}

/** An error named after its HTTP status (`Bad Request`, `Payload Too Large`, …). */
export const statusError = (statusCode: number, message: string): ApiError =>
  new ApiError(statusCode, statusName(statusCode), message);

/** One instance for every answer: a 404 for an order is ordinary traffic, and a new Error per answer captures a stack. */
export const orderNotFound: ApiError = new ApiError(
  404,
  'Not Found',
  'The order was not found or is not accessible with this API key.',
);

export const unauthorized = (message: string): ApiError =>
  new ApiError(401, 'Unauthorized', message, { 'www-authenticate': 'Bearer' });

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send(error.body());
}

function statusName(statusCode: number): string {
  return STATUS_CODES[statusCode] ?? 'Error';
}
