/** The part of @elastic/mockotlpserver (which ships no types) that the tests use. */
declare module '@elastic/mockotlpserver' {
  export class MockOtlpServer {
    constructor(options: {
      services?: ('http' | 'grpc' | 'ui')[];
      httpHostname?: string;
      httpPort?: number;
      logLevel?: string;
      onTrace?: (request: unknown) => void;
      onRequest?: (request: {
        transport: string;
        method: string;
        path: string;
        headers: Record<string, string>;
      }) => void;
    });
    httpUrl: URL | null;
    start(): Promise<void>;
    close(): Promise<void>;
  }
  /** An ExportTraceServiceRequest with hex ids, attributes as objects, enums as names. */
  export function normalizeTrace(request: unknown): {
    resourceSpans: {
      resource?: { attributes?: Record<string, unknown> };
      scopeSpans: {
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: string;
          attributes?: Record<string, unknown>;
          status?: { code?: string; message?: string };
          startTimeUnixNano: string;
          endTimeUnixNano: string;
        }[];
      }[];
    }[];
  };
}

/** The receiver's protobuf definitions (OpenTelemetry's .proto files, loaded by protobufjs). */
declare module '@elastic/mockotlpserver/lib/proto.js' {
  export function getProtoRoot(): {
    lookupType(name: string): {
      decode(buffer: Uint8Array): { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] };
    };
  };
}
