/**
 * The W3C `traceparent` of the caller's current OpenTelemetry context, or `undefined`.
 *
 * `undefined` when `@opentelemetry/api` is not installed, when no span is current (or no SDK is
 * registered: the API's no-op), or when the host's registered propagator does not write
 * `traceparent` (the OpenTelemetry SDKs register W3C Trace Context by default). Written by the API's
 * global propagator (`propagation.inject`), never by hand. Never rejects: a tracing fault only means
 * the write is in its session's own trace.
 */
export declare function currentTraceparent(): Promise<string | undefined>;
