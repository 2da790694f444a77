// Where the console is: the view and its parameters, kept in the URL's hash (`#/memories?ns=work&id=…`)
// so a reload or a shared link opens the same place.

// `key`: the letter after `g` that opens it; `global`: needs no namespace.
export const VIEWS = [
  { id: "home", title: "Home", key: "h" },
  { id: "memories", title: "Memories", key: "m" },
  { id: "documents", title: "Documents", key: "d" },
  { id: "graph", title: "Graph", key: "g" },
  { id: "chat", title: "Chat", key: "c" },
  { id: "activity", title: "Activity", key: "a", global: true },
  { id: "nodes", title: "Nodes", key: "n", global: true },
  { id: "connect", title: "Connect", key: "k", global: true },
];
export function readRoute() {
  const [path, search] = location.hash.replace(/^#\/?/, "").split("?");
  const view = VIEWS.find((v) => v.id === path) ? path : "home";
  return { view, params: Object.fromEntries(new URLSearchParams(search || "")) };
}

export function href(view, params = {}) {
  const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
  const query = search.toString();
  return `#/${view}${query ? `?${query}` : ""}`;
}

export function navigate(view, params = {}) {
  location.hash = href(view, params);
}
