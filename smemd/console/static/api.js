// The one way the console reaches smemd: the public API, with the tab's token if it has one.

const TOKEN_KEY = "smem.token";

export class ApiError extends Error {
  constructor(status, error, details) {
    super(details ? `${error}: ${details}` : error);
    this.status = status;
    this.error = error;
    this.details = details;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

const unauthorized = new Set();
// Called when a call answers 401 (the token was changed or removed on the daemon).
export function onUnauthorized(listener) {
  unauthorized.add(listener);
  return () => unauthorized.delete(listener);
}

function url(path, query) {
  const made = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") made.searchParams.set(key, value);
  }
  return made;
}

// `body` is sent as JSON, `form` (a FormData) as multipart; the reply's JSON, or its text (or
// with `blob`, its bytes as they came).
export async function api(path, { method = "GET", query, body, form, signal, accept, blob } = {}) {
  const headers = {};
  const held = token();
  if (held) headers.Authorization = `Bearer ${held}`;
  if (accept) headers.Accept = accept;
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  } else if (form) {
    payload = form;
  }
  const response = await fetch(url(path, query), { method, headers, body: payload, signal });
  const type = response.headers.get("Content-Type") || "";
  if (!response.ok) {
    if (response.status === 401) unauthorized.forEach((listener) => listener());
    let error = { error: response.statusText, details: "" };
    if (type.includes("json")) error = await response.json().catch(() => error);
    throw new ApiError(response.status, error.error || response.statusText, error.details || "");
  }
  if (response.status === 204) return null;
  if (blob) return response.blob();
  return type.includes("json") ? response.json() : response.text();
}

// A body saved as a file (an export): fetched with the tab's token, which a plain link could
// not carry, then handed to the browser's download.
export async function download(path, filename) {
  const blob = await api(path, { blob: true });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60000);
}

export const ns = (name) => `/ns/${encodeURIComponent(name)}`;
