import type { components } from './generated/openapi.js';
type Schemas = components['schemas'];
/** An entry's state as every host write answers it, and as `current` on a 409. */
export type EntryState = Schemas['EntryState'];
/** `approved` | `execution_started` | `completed` | `failed` | `outcome_unknown`. */
export type LedgerStatus = Schemas['LedgerStatus'];
/** `pre_dispatch_deadline` (with a cancellation) | `execution_timeout` (with `outcome_unknown`). */
export type Reason = Schemas['Reason'];
/** The JSON error: `{"code", "message", "field"?, "current"?}`. */
export type ErrorDetail = Schemas['ErrorDetail'];
/** One operation of a batch: `{"op", "session_key", …the single call's fields}`. */
export type BatchItem = Schemas['BatchItem'];
/** One batch result: `{"status", "entry"?, "error"?}`, the status the single call would have answered. */
export type BatchResult = Schemas['BatchResult'];
/** `{"results": [...]}`, one per operation, in order. */
export type BatchResults = Schemas['BatchResults'];
/** `{"url": "/v/<token>", "expires_at"}`; `url` is relative to the server. */
export type ViewerLinkCreated = Schemas['ViewerLinkCreated'];
/** `{"revoked": n}`. */
export type ViewerLinksRevoked = Schemas['ViewerLinksRevoked'];
/** Reconciliation evidence `{"source", "reference", "observed_at", "provider_status"?}` (docs/api.md "Host write API", reconcile). */
export type ReconcileBody = Schemas['ReconcileBody'];
/** One published `mutation_outcome/v1` record. */
export type MutationOutcome = Schemas['MutationOutcome'];
/** Host metadata of an entry (docs/api.md "Host write API", attach host metadata); each sanitised by the server, missing or empty → `null`. */
export interface HostMetadata {
    /** The resource's id at the provider (published as `resource_id`; withheld over 256 bytes). */
    id?: string | null;
    /** An http(s) URL; userinfo, query and fragment are dropped; withheld over 2048 bytes. */
    url?: string | null;
    /** A title; truncated to 512 bytes, credentials redacted. */
    title?: string | null;
}
/** Evidence about the ORIGINAL attempt (docs/api.md "Host write API", reconcile). `observedAt` is RFC 3339 or a `Date`. */
export interface Evidence {
    source: string;
    reference: string;
    observedAt: string | Date;
    /** `completed` (with `completed: true`) or `not_accepted` (with `completed: false`); anything else is refused (422). */
    providerStatus?: 'completed' | 'not_accepted';
}
export {};
