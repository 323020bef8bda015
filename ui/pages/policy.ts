import { ago, Badge, html } from "../html";
import type { components } from "../../clients/typescript/src/api";

type Pool = components["schemas"]["Pool"];
type Autoscale = NonNullable<Pool["autoscale"]>;
type Rotation = NonNullable<Pool["rotation"]>;

const pct = (x: number) => `${Math.round(x * 100)}%`;
const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));

/** One autoscaled pool: its bounds, what the last round saw, and its last decision with the reasons. */
function AutoscaleRow({ pool, a }: { pool: string; a: Autoscale }) {
    const s = a.signals;
    const d = a.lastDecision;
    return html`<tr data-policy=${`autoscale-${pool}`}>
        <th scope="row">${pool}</th>
        <td>${a.min}–${a.max}, target ${pct(a.targetUtilization)}</td>
        <td>
            ${
                s
                    ? html`${`${pct(s.utilization)} used (${num(s.leased)} of ${num(s.healthy)}), ${s.refusedLeases + s.refusedGateway} refused; wants ${s.wanted}`}
                      ${s.holding ? html`<div class="muted">${s.holding}</div>` : ""}`
                    : html`<span class="muted">no round yet (or not the leader)</span>`
            }
        </td>
        <td>
            ${
                d
                    ? html`${d.from} → ${d.to} ${ago(d.at)}
                          <div class="muted">${d.reasons.join("; ")}</div>`
                    : html`<span class="muted">none</span>`
            }
        </td>
    </tr>`;
}

/** One rotating pool: its period and surge, the next deadline, and the members its last rotation replaced. */
function RotationRow({ pool, r }: { pool: string; r: Rotation }) {
    const last = r.lastRotation;
    return html`<tr data-policy=${`rotation-${pool}`}>
        <th scope="row">${pool}</th>
        <td>every ${r.rotateAfterSeconds} s, surge ${r.maxSurge}</td>
        <td>
            ${r.nextDueAt ? html`next ${ago(r.nextDueAt)}` : html`<span class="muted">no member due</span>`}
            ${r.holding ? html`<div class="muted">${r.holding}</div>` : ""}
        </td>
        <td>
            ${
                last
                    ? html`<${Badge} value=${last.status} /> ${ago(last.at)}:
                          ${
                              last.rotations
                                  .map(
                                      (x) =>
                                          `${x.member} (${x.reason}${x.oldEgressIp || x.newEgressIp ? `, ${x.oldEgressIp ?? "?"} → ${x.newEgressIp ?? "?"}` : ""})`,
                                  )
                                  .join(", ") || "no member"
                          }`
                    : html`<span class="muted">none yet</span>`
            }
        </td>
    </tr>`;
}

/**
 * Fleet policy (issue 20): the pools that follow demand or rotate, with what each loop saw and did last.
 * Nothing is shown for a fleet without either: the pools table says all there is.
 */
export function PolicyPanel({ pools }: { pools: Pool[] }) {
    const autoscaled = pools.filter((p) => p.autoscale);
    const rotating = pools.filter((p) => p.rotation);
    if (autoscaled.length === 0 && rotating.length === 0) return null;
    return html`<h2>Fleet policy</h2>
        ${
            autoscaled.length > 0 &&
            html`<table>
                <caption>
                    Autoscaling: desired = ceil(demand / target), within the bounds
                </caption>
                <thead>
                    <tr>
                        <th scope="col">Pool</th>
                        <th scope="col">Bounds</th>
                        <th scope="col">Signal</th>
                        <th scope="col">Last decision</th>
                    </tr>
                </thead>
                <tbody>
                    ${autoscaled.map((p) => html`<${AutoscaleRow} key=${p.name} pool=${p.name} a=${p.autoscale!} />`)}
                </tbody>
            </table>`
        }
        ${
            rotating.length > 0 &&
            html`<table>
                <caption>
                    Rotation: aged members replaced behind a surge member, healthy never below desired
                </caption>
                <thead>
                    <tr>
                        <th scope="col">Pool</th>
                        <th scope="col">Policy</th>
                        <th scope="col">Next</th>
                        <th scope="col">Last rotation</th>
                    </tr>
                </thead>
                <tbody>
                    ${rotating.map((p) => html`<${RotationRow} key=${p.name} pool=${p.name} r=${p.rotation!} />`)}
                </tbody>
            </table>`
        }`;
}
