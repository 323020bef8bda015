/**
 * The dashboard's pages by path: one list for the server (which answers these 200 and any other path
 * outside /v1 with the app's 404 page) and the UI's router (ui/app.ts imports it; esbuild bundles it).
 */
export const DASHBOARD_PAGES = {
    "/": "Pools",
    "/proxies": "Proxies",
    "/operations": "Operations",
    "/providers": "Provider health",
    "/leases": "Active leases",
} as const;

export type DashboardPath = keyof typeof DASHBOARD_PAGES;

export function isDashboardPage(path: string): path is DashboardPath {
    return Object.prototype.hasOwnProperty.call(DASHBOARD_PAGES, path);
}
