import { useState } from "preact/hooks";
import { api } from "../api";
import { usePoll } from "../hooks";
import { ErrorNote, html } from "../html";
import { Timeline, TimelinePoint } from "../timeline";
import { OperationProgress } from "./operation-progress";
import { PolicyPanel } from "./policy";
import type { components } from "../../clients/typescript/src/api";

type Pool = components["schemas"]["Pool"];

function ScaleForm({ pool, onStarted }: { pool: Pool; onStarted: (opId: string) => void }) {
    const [value, setValue] = useState(String(pool.desired));
    const [error, setError] = useState<Error>();
    const submit = async (e: Event) => {
        e.preventDefault();
        setError(undefined);
        try {
            const r = await api<{ operation: { id: string } }>(
                "PUT",
                `/v1/pools/${encodeURIComponent(pool.name)}/replicas`,
                { replicas: Number(value) },
            );
            onStarted(r.operation.id);
        } catch (err) {
            setError(err as Error);
        }
    };
    return html`<form class="scale" onSubmit=${submit}>
        <label
            >Replicas for ${pool.name}
            <input
                type="number"
                min="0"
                max=${pool.maxReplicas}
                required
                value=${value}
                onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)}
        /></label>
        <button type="submit">Scale</button>
        <${ErrorNote} error=${error} />
    </form>`;
}

/** Pools with their counts, a scale control for tokens with `scale`, and the last hour's timeline. */
export function PoolsPage({ canScale }: { canScale: boolean }) {
    const pools = usePoll(() => api<{ pools: Pool[] }>("GET", "/v1/pools"), 2000);
    const timeline = usePoll(() => api<{ points: TimelinePoint[] }>("GET", "/v1/timeline"), 2000);
    const [opId, setOpId] = useState<string>();
    const list = pools.data?.pools ?? [];
    return html`<h2>Pools</h2>
        <${ErrorNote} error=${pools.error} />
        <table>
            <caption>
                Members per pool
            </caption>
            <thead>
                <tr>
                    <th scope="col">Pool</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Desired</th>
                    <th scope="col">Actual</th>
                    <th scope="col">Healthy</th>
                    <th scope="col">Leased</th>
                    <th scope="col">Draining</th>
                    ${canScale && html`<th scope="col">Scale</th>`}
                </tr>
            </thead>
            <tbody>
                ${list.map(
                    (p) =>
                        html`<tr data-pool=${p.name}>
                            <th scope="row">${p.name}</th>
                            <td>${p.provider}</td>
                            <td>${p.desired}</td>
                            <td>${p.actual}</td>
                            <td class="healthy-count">${p.healthy}</td>
                            <td>${p.leased}</td>
                            <td>${p.draining}</td>
                            ${
                                canScale &&
                                html`<td>
                                    ${
                                        p.scalable
                                            ? html`<${ScaleForm}
                                                  key=${p.name}
                                                  pool=${p}
                                                  onStarted=${(id: string) => {
                                                      setOpId(id);
                                                      pools.reload();
                                                  }}
                                              />`
                                            : html`<span class="muted">follows provider ${p.provider}'s list</span>`
                                    }
                                </td>`
                            }
                        </tr>`,
                )}
            </tbody>
        </table>
        ${opId && html`<${OperationProgress} id=${opId} />`}
        <${PolicyPanel} pools=${list} />
        <h2>Last hour</h2>
        <${ErrorNote} error=${timeline.error} />
        ${list.map((p) => html`<${Timeline} pool=${p.name} points=${timeline.data?.points ?? []} />`)}`;
}
