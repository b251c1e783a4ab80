// The host's OpenTelemetry trace context, sent with a protected write's approve (docs/api.md "Host
// write API", the field `traceparent`): the ledger's span `mutation_outcome {tool}` is then a child of
// the span current when the protected write began (an agent framework's tool span, for instance),
// docs/operations.md "OpenTelemetry".

/** The part of `@opentelemetry/api` read here (an optional peer dependency: never required). */
interface PropagationApi {
  context: { active(): unknown };
  propagation: { inject(context: unknown, carrier: Record<string, string>): void };
}

// The specifier is a variable so that bundlers do not require the optional peer to be installed.
const API = '@opentelemetry/api';
let api: Promise<PropagationApi | null> | undefined;

function loadApi(): Promise<PropagationApi | null> {
  api ??= import(API).then(
    (m: unknown) => {
      const mod = m as Partial<PropagationApi> & { default?: Partial<PropagationApi> };
      const found = mod.propagation && mod.context ? mod : mod.default;
      return found?.propagation && found.context ? (found as PropagationApi) : null;
    },
    () => null,
  );
  return api;
}

/**
 * The W3C `traceparent` of the caller's current OpenTelemetry context, or `undefined`.
 *
 * `undefined` when `@opentelemetry/api` is not installed, when no span is current (or no SDK is
 * registered: the API's no-op), or when the host's registered propagator does not write
 * `traceparent` (the OpenTelemetry SDKs register W3C Trace Context by default). Written by the API's
 * global propagator (`propagation.inject`), never by hand. Never rejects: a tracing fault only means
 * the write is in its session's own trace.
 */
export async function currentTraceparent(): Promise<string | undefined> {
  const otel = await loadApi();
  if (otel === null) return undefined;
  try {
    const carrier: Record<string, string> = {};
    otel.propagation.inject(otel.context.active(), carrier);
    const value = carrier.traceparent;
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}
