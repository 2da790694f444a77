// The shell: who the caller is, the namespace, the rail (switcher, views, substrate), the route
// in the URL's hash (`#/memories?ns=work&id=…`), the keyboard, and the view on the right.

import { api, onUnauthorized, setToken } from "./api.js";
import { html, render, useApi, useEffect, useState } from "./ui.js";
import { VIEWS, href, navigate, readRoute } from "./route.js";
import { Substrate } from "./substrate.js";

const NS_KEY = "smem.namespace";
const loaded = new Map(); // view id -> its module's promise: each view is fetched on first use

function useRoute() {
  const [route, setRoute] = useState(readRoute);
  useEffect(() => {
    const changed = () => setRoute(readRoute());
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

// `g` then a view's letter opens it; `/` focuses the page's search (the element marked
// `data-search`). Keys typed into a field are the field's. Installed once, before the first
// render, so a key pressed as soon as the page shows is not lost.
function installKeyboard() {
  let pendingG = 0;
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "/") {
      const search = document.querySelector("[data-search]");
      if (search) { event.preventDefault(); search.focus(); }
      return;
    }
    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      const view = VIEWS.find((v) => v.key === event.key);
      if (view) { event.preventDefault(); navigate(view.id, view.global ? {} : currentNamespaceParam()); }
      return;
    }
    pendingG = event.key === "g" ? Date.now() : 0;
  });
}

function currentNamespaceParam() {
  const { params } = readRoute();
  return params.ns ? { ns: params.ns } : {};
}

function NamespaceSwitcher({ namespace, names, onChange }) {
  const [typed, setTyped] = useState(namespace);
  useEffect(() => setTyped(namespace), [namespace]);
  const submit = (event) => {
    event.preventDefault();
    const name = typed.trim();
    if (/^[a-zA-Z0-9_:-]{1,100}$/.test(name)) onChange(name);
  };
  return html`<form class="switcher" onSubmit=${submit}>
    <label>Namespace
      <input list="namespaces" value=${typed} onInput=${(e) => setTyped(e.target.value)}
        onChange=${submit} pattern="[a-zA-Z0-9_:\\-]{1,100}" required aria-describedby="ns-help" />
    </label>
    <datalist id="namespaces">${names.map((n) => html`<option value=${n.namespace}>${n.documentCount} docs</option>`)}</datalist>
    <span id="ns-help" class="sr-only">Type a namespace's name, or pick one of the list</span>
  </form>`;
}

function Rail({ views, route, namespace, names, onNamespace, session }) {
  return html`<aside class="rail">
    <div class="brand"><img src="/console/icon.svg" alt="" /> smem</div>
    ${names && html`<${NamespaceSwitcher} namespace=${namespace} names=${names} onChange=${onNamespace} />`}
    <nav aria-label="Views"><ul>
      ${views.map((v) => html`<li><a href=${href(v.id, v.global ? {} : { ns: namespace })}
        aria-current=${route.view === v.id ? "page" : undefined}>${v.title} <kbd aria-hidden="true">g ${v.key}</kbd></a></li>`)}
    </ul></nav>
    ${session && session.role && html`<${Substrate} />`}
  </aside>`;
}

function View({ id, props }) {
  const [module, setModule] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!loaded.has(id)) loaded.set(id, import(`./views/${id}.js`));
    setModule(null);
    setError(null);
    loaded.get(id).then(setModule, setError);
  }, [id]);
  if (error) return html`<p class="error" role="alert">The view did not load: ${error.message}</p>`;
  if (!module) return html`<p class="muted">Loading…</p>`;
  const Component = module.default;
  return html`<${Component} ...${props} />`;
}

function App() {
  const route = useRoute();
  const [tokenGeneration, setTokenGeneration] = useState(0);
  const session = useApi(() => api("/v1/whoami"), [tokenGeneration]);
  useEffect(() => onUnauthorized(() => setTokenGeneration((g) => g + 1)), []);
  const caller = session.data;
  const allowed = caller && caller.role !== null;
  // Reloaded when whoami has answered for the new token, never before: the old answer would send
  // a forgotten token's tab to a route it may no longer call.
  const names = useApi(() => (allowed ? api("/ns", { query: { limit: 100 } }) : null), [allowed, caller]);
  const listed = names.data ? names.data.namespaces : null;
  const namespace = route.params.ns || sessionStorage.getItem(NS_KEY) || (listed && listed[0] && listed[0].namespace) || "default";
  useEffect(() => { if (route.params.ns) sessionStorage.setItem(NS_KEY, route.params.ns); }, [route.params.ns]);
  const locked = !allowed; // a token is required and this tab has none (or a wrong one)
  const view = locked ? "connect" : route.view;
  const title = VIEWS.find((v) => v.id === view).title;
  useEffect(() => { document.title = `${title} · smem`; }, [title]);

  if (!caller) {
    return session.error
      ? html`<p class="error boot" role="alert">smemd did not answer: ${session.error.message}</p>`
      : html`<p class="boot">Loading smem…</p>`;
  }
  const views = locked ? VIEWS.filter((v) => v.id === "connect") : VIEWS;
  const props = {
    ns: namespace,
    params: route.params,
    session: caller,
    isAdmin: caller.role === "admin",
    canWrite: caller.role === "write" || caller.role === "admin",
    namespaces: listed || [],
    reloadNamespaces: names.reload,
    onToken: (value) => { setToken(value); setTokenGeneration((g) => g + 1); },
  };
  const onNamespace = (name) => { sessionStorage.setItem(NS_KEY, name); navigate(VIEWS.find((v) => v.id === view).global ? "home" : view, { ns: name }); };
  return html`<div class="shell">
    <${Rail} views=${views} route=${{ view }} namespace=${namespace} names=${locked ? null : listed || []}
      onNamespace=${onNamespace} session=${caller} />
    <main class="main" id="main"><div class=${`view view-${view}`}><${View} id=${view} props=${props} key=${view} /></div></main>
  </div>`;
}

installKeyboard();
render(html`<${App} />`, document.getElementById("app"));
