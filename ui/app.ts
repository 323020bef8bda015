import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { DASHBOARD_PAGES, isDashboardPage } from "../src/service/api/dashboard-pages";
import { api, ApiError, setOnUnauthorized, token } from "./api";
import { ErrorNote, html } from "./html";
import { PoolsPage } from "./pages/pools";
import { ProxiesPage } from "./pages/proxies";
import { LeasesPage, OperationsPage, ProvidersPage } from "./pages/misc";
import type { components } from "../clients/typescript/src/api";

type Who = components["schemas"]["Whoami"];
const has = (who: Who, scope: Who["scopes"][number]) => who.scopes.includes(scope) || who.scopes.includes("admin");

function Login({ onLogin, notice }: { onLogin: (who: Who) => void; notice?: string }) {
    const [value, setValue] = useState("");
    const [error, setError] = useState<Error>();
    const submit = async (e: Event) => {
        e.preventDefault();
        token.set(value.trim());
        try {
            onLogin(await api<Who>("GET", "/v1/whoami"));
        } catch (err) {
            token.clear();
            setError(err as Error);
        }
    };
    return html`<main class="login">
        <h1>egress</h1>
        <form onSubmit=${submit} aria-label="Log in">
            <p>
                ${notice ?? "Log in with an API token. It is kept in this tab only (sessionStorage) and sent as a Bearer header."}
            </p>
            <label
                >API token
                <input
                    type="password"
                    autocomplete="off"
                    required
                    value=${value}
                    onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)}
            /></label>
            <button type="submit">Log in</button>
            <${ErrorNote} error=${error} />
        </form>
    </main>`;
}

/** Page paths each scope may see; a page a token cannot read is not offered. */
const NEEDS: Record<string, Who["scopes"][number]> = { "/operations": "scale" };

function App() {
    const [who, setWho] = useState<Who>();
    const [checking, setChecking] = useState(!!token.get());
    const [notice, setNotice] = useState<string>();
    const [path, setPath] = useState(location.pathname);
    const loggedIn = useRef(false);
    loggedIn.current = !!who || checking; // a stored token being checked counts as a session too
    useEffect(() => {
        setOnUnauthorized(() => {
            // A refused login says so in its own form; only a session that was running gets the notice.
            if (loggedIn.current) setNotice("Your session ended (the token was refused). Log in again.");
            setWho(undefined);
        });
        const pop = () => setPath(location.pathname);
        addEventListener("popstate", pop);
        if (token.get())
            api<Who>("GET", "/v1/whoami")
                .then(setWho, () => undefined)
                .finally(() => setChecking(false));
        return () => removeEventListener("popstate", pop);
    }, []);
    if (checking) return html`<main><p>Loading…</p></main>`;
    if (!who)
        return html`<${Login}
            notice=${notice}
            onLogin=${(w: Who) => {
                setNotice(undefined);
                setWho(w);
            }}
        />`;
    const go = (to: string) => (e: Event) => {
        e.preventDefault();
        history.pushState(null, "", to);
        setPath(to);
    };
    const logout = () => {
        token.clear();
        setWho(undefined);
    };
    const pages = Object.entries(DASHBOARD_PAGES).filter(([p]) => !NEEDS[p] || has(who, NEEDS[p]));
    let page;
    if (!isDashboardPage(path))
        page = html`<h2>Page not found</h2>
            <p>There is no page at <code>${path}</code>. <a href="/" onClick=${go("/")}>Back to pools</a>.</p>`;
    else if (NEEDS[path] && !has(who, NEEDS[path]))
        page = html`<h2>${DASHBOARD_PAGES[path]}</h2>
            <${ErrorNote}
                error=${new ApiError(403, "forbidden", `token "${who.name}" lacks the \`${NEEDS[path]}\` scope this page needs`)}
            />`;
    else if (path === "/") page = html`<${PoolsPage} canScale=${has(who, "scale")} />`;
    else if (path === "/proxies") page = html`<${ProxiesPage} />`;
    else if (path === "/operations") page = html`<${OperationsPage} />`;
    else if (path === "/providers") page = html`<${ProvidersPage} />`;
    else page = html`<${LeasesPage} />`;
    return html`<header>
            <h1>egress</h1>
            <nav aria-label="Pages">
                <ul>
                    ${pages.map(([p, title]) => html`<li><a href=${p} aria-current=${p === path ? "page" : undefined} onClick=${go(p)}>${title}</a></li>`)}
                </ul>
            </nav>
            <p class="who">
                ${who.name} (${who.scopes.join(", ")}) <button type="button" onClick=${logout}>Log out</button>
            </p>
        </header>
        <main>${page}</main>`;
}

render(html`<${App} />`, document.getElementById("app")!);
