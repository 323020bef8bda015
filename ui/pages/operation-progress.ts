import { useEffect, useState } from "preact/hooks";
import { followEvents } from "../api";
import { Badge, ErrorNote, html } from "../html";
import type { components } from "../../clients/typescript/src/api";

/** The stream's `progress` event, as the API document (and so the generated client) defines it. */
type Progress = components["schemas"]["ProgressEvent"];

/** One operation, live: its status and, resource by resource, what the engine does (SSE). */
export function OperationProgress({ id }: { id: string }) {
    const [status, setStatus] = useState<any>();
    const [resources, setResources] = useState<
        Map<string, { type?: string; op?: string; state: string; message?: string }>
    >(new Map());
    const [notes, setNotes] = useState<string[]>([]);
    const [error, setError] = useState<Error>();
    useEffect(() => {
        const ctl = new AbortController();
        setResources(new Map());
        setNotes([]);
        followEvents(
            id,
            (type, data) => {
                if (type === "status") return setStatus(data);
                const e = data as Progress;
                if (e.kind === "diagnostic" || e.kind === "summary")
                    return e.message && setNotes((n) => [...n.slice(-19), e.message!]);
                if (!e.name) return;
                const state = e.kind === "resource-start" ? "running" : e.kind === "resource-done" ? "done" : "failed";
                setResources((m) => new Map(m).set(e.name!, { type: e.type, op: e.op, state, message: e.message }));
            },
            ctl.signal,
        ).catch((e: Error) => e.name !== "AbortError" && setError(e));
        return () => ctl.abort();
    }, [id]);
    const rows = [...resources.entries()];
    return html`<section class="operation" aria-label=${`Operation ${id}`}>
        <h3>Operation <code>${id}</code> ${status && html`<${Badge} value=${status.status} />`}</h3>
        ${
            status?.desired &&
            html`<p>
                Desired:
                ${Object.entries(status.desired)
                    .map(([p, n]) => `${p} → ${n}`)
                    .join(", ")}
            </p>`
        }
        ${
            status?.rolling &&
            html`<p>
                Rolling ${status.rolling.pool}: batch ${status.rolling.batch} of ${status.rolling.of} replaces
                ${status.rolling.members.join(", ")}${status.rolling.surge.length ? ` (surge: ${status.rolling.surge.join(", ")})` : ""};
                ${status.rolling.replaced.length} replaced so far
            </p>`
        }
        ${status?.error && html`<p class="error">${status.error}</p>`}
        <${ErrorNote} error=${error} />
        <table>
            <caption>
                Resources
            </caption>
            <thead>
                <tr>
                    <th scope="col">Resource</th>
                    <th scope="col">Type</th>
                    <th scope="col">Step</th>
                    <th scope="col">State</th>
                </tr>
            </thead>
            <tbody>
                ${
                    rows.length === 0
                        ? html`<tr>
                              <td colspan="4">No resource changes yet.</td>
                          </tr>`
                        : rows.map(
                              ([name, r]) =>
                                  html`<tr>
                                      <td>${name}</td>
                                      <td>${r.type ?? ""}</td>
                                      <td>${r.op ?? ""}</td>
                                      <td><${Badge} value=${r.state} />${r.message ? ` ${r.message}` : ""}</td>
                                  </tr>`,
                          )
                }
            </tbody>
        </table>
        ${
            notes.length > 0 &&
            html`<details>
                <summary>Engine messages (${notes.length})</summary>
                <pre>${notes.join("\n")}</pre>
            </details>`
        }
    </section>`;
}
