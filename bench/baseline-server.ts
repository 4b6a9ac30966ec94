/** Baseline for the API benchmark: a bare Fastify route answering a constant small JSON through a response schema. */
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';

const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
app.setValidatorCompiler(validatorCompiler);
app.setSerializerCompiler(serializerCompiler);
const Reply = z.object({ status: z.string(), total: z.number().int(), limit: z.number().int() });
app.get('/constant', { schema: { response: { 200: Reply } } }, () => ({
  status: 'ok',
  total: 42,
  limit: 50,
}));
await app.listen({ host: '127.0.0.1', port: Number(process.argv[2] ?? 0) });
console.log('listening');
