/**
 * Registers every codec a producer may use (`codecs.ts`) with kafkajs, once per module instance (the
 * projector's worker thread has its own) when this module is loaded: kafkajs reads only gzip by
 * itself, and with no bound on what a batch inflates to.
 */
import kafkajs from './kafkajs-client.js';
import { kafkaCodecs } from './codecs.js';

// Off the default export: Node's ESM loader does not see these among kafkajs's CommonJS named exports.
const { CompressionCodecs, CompressionTypes } = kafkajs;
CompressionCodecs[CompressionTypes.GZIP] = kafkaCodecs[1];
CompressionCodecs[CompressionTypes.Snappy] = kafkaCodecs[2];
CompressionCodecs[CompressionTypes.LZ4] = kafkaCodecs[3];
CompressionCodecs[CompressionTypes.ZSTD] = kafkaCodecs[4];
