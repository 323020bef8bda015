import { h } from "preact";
import htm from "htm";

/** Tagged templates instead of JSX: no JSX transform, the same code runs as written. */
export const html = htm.bind(h);

export const ErrorNote = ({ error }: { error?: Error }) =>
    error ? html`<p class="error" role="alert">${error.message}</p>` : null;

/** "12 s ago" / "in 3 min": times relative to now, exact time in the tooltip. */
export function ago(iso?: string) {
    if (!iso) return "";
    const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
    const a = Math.abs(s);
    const text = a < 90 ? `${a} s` : a < 5400 ? `${Math.round(a / 60)} min` : `${Math.round(a / 3600)} h`;
    return html`<time datetime=${iso} title=${iso}>${s > 0 ? `in ${text}` : `${text} ago`}</time>`;
}

export const Badge = ({ value }: { value: string }) => html`<span class=${`badge ${value}`}>${value}</span>`;
