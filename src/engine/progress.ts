import type { EngineEvent } from "@pulumi/pulumi/automation";
import { urnName } from "./state";

/** A compact, serializable view of one engine event: what crawler ops and the CLI show as progress. */
export interface ProgressEvent {
    at: string;
    kind: "resource-start" | "resource-done" | "resource-failed" | "diagnostic" | "summary";
    op?: string;
    type?: string;
    name?: string;
    message?: string;
    severity?: string;
    changes?: Record<string, number>;
}

export { urnName };

/** Maps raw engine events to progress events; uninteresting ones (same-steps, stdout noise) map to undefined. */
export function toProgress(e: EngineEvent): ProgressEvent | undefined {
    const at = new Date(e.timestamp * 1000).toISOString();
    if (e.resourcePreEvent && e.resourcePreEvent.metadata.op !== "same") {
        const m = e.resourcePreEvent.metadata;
        return { at, kind: "resource-start", op: m.op, type: m.type, name: urnName(m.urn) };
    }
    if (e.resOutputsEvent && e.resOutputsEvent.metadata.op !== "same") {
        const m = e.resOutputsEvent.metadata;
        return { at, kind: "resource-done", op: m.op, type: m.type, name: urnName(m.urn) };
    }
    if (e.resOpFailedEvent) {
        const m = e.resOpFailedEvent.metadata;
        return { at, kind: "resource-failed", op: m.op, type: m.type, name: urnName(m.urn) };
    }
    if (e.diagnosticEvent && (e.diagnosticEvent.severity === "error" || e.diagnosticEvent.severity === "warning")) {
        const d = e.diagnosticEvent;
        return {
            at,
            kind: "diagnostic",
            severity: d.severity,
            name: d.urn ? urnName(d.urn) : undefined,
            message: d.message.trim(),
        };
    }
    if (e.summaryEvent) {
        return { at, kind: "summary", changes: e.summaryEvent.resourceChanges as Record<string, number> };
    }
    return undefined;
}
