/**
 * HMAC signing for the vault platform's APIs (docs/integrators/authentication.md, "The HMAC scheme"), for fetch
 * and typescript-fetch clients.
 *
 * Copy this file into your project. It needs Node 18+ (node:crypto and the global fetch); nothing else.
 * The signature covers the exact bytes of the body sent, so the body is signed as the request carries it:
 *
 *   import { Configuration, DefaultApi } from "./generated";          // a typescript-fetch client
 *   import { vaultHmacMiddleware } from "./vaultHmac";
 *   const api = new DefaultApi(new Configuration({ basePath: baseUrl,
 *     middleware: [vaultHmacMiddleware("demo", hmacKey)] }));
 *
 *   // or plain fetch
 *   const signedFetch = vaultHmacFetch("demo", hmacKey);
 *   await signedFetch(baseUrl + "/api/partner/validate", { method: "POST", body: JSON.stringify({ reference: "r-1" }),
 *     headers: { "Content-Type": "application/json" } });
 *
 * Each request gets a fresh nonce and timestamp (a header is good for one request). The string signed is
 * `POST <path>\n<nonce>\n<timestamp>\n\n<lowercase hex SHA-256 of the body bytes>`: always the literal `POST`, the
 * URL's path without the query string, keyed with the hmacKey exactly as issued (its ASCII bytes, not decoded).
 */
import { createHash, createHmac, randomBytes } from "node:crypto";

/** The canonical string of the scheme. */
export function stringToSign(path: string, nonce: string, timestamp: number | string, body: Uint8Array): string {
  const bodyHash = createHash("sha256").update(body).digest("hex");
  return `POST ${path}\n${nonce}\n${timestamp}\n\n${bodyHash}`;
}

/** The `Authorization` header value for one request over `body` (the exact bytes sent). */
export function hmacAuthorization(partnerId: string, hmacKey: string, path: string, body: Uint8Array,
                                  nonce: string = randomBytes(16).toString("hex"),
                                  timestamp: number = Math.floor(Date.now() / 1000)): string {
  const resource = path.split("?", 1)[0];
  const response = createHmac("sha256", Buffer.from(hmacKey, "ascii"))
    .update(stringToSign(resource, nonce, timestamp, body), "utf8").digest("hex");
  return `Hmac username="${partnerId}", nonce="${nonce}", timestamp="${timestamp}", response="${response}"`;
}

/** The bytes fetch sends for a body: strings as UTF-8, binary as is, URLSearchParams as its form text. */
export async function bodyBytes(body: unknown): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array();
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof URLSearchParams) return new TextEncoder().encode(body.toString());
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof Blob) return new Uint8Array(await body.arrayBuffer());
  throw new TypeError("vaultHmac: this body type cannot be signed (send a string, bytes or URLSearchParams)");
}

function pathOf(url: string): string {
  return decodeURIComponent(new URL(url, "http://localhost").pathname);
}

/**
 * The `RequestInit` with its `Authorization` header set for `url`. When the body is URLSearchParams, it is
 * replaced by its text (what is signed is what is sent) and the form Content-Type is set if none was.
 */
export async function signRequest(partnerId: string, hmacKey: string, url: string,
                                  init: RequestInit = {}): Promise<RequestInit> {
  const headers = new Headers(init.headers);
  let body = init.body;
  if (body instanceof URLSearchParams) {
    if (!headers.has("Content-Type")) headers.set("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8");
    body = body.toString();
  }
  headers.set("Authorization", hmacAuthorization(partnerId, hmacKey, pathOf(url), await bodyBytes(body)));
  return { ...init, headers, body };
}

/** A fetch that signs every request. */
export function vaultHmacFetch(partnerId: string, hmacKey: string,
                               fetchApi: typeof fetch = fetch): (url: string, init?: RequestInit) => Promise<Response> {
  return async (url, init = {}) => fetchApi(url, await signRequest(partnerId, hmacKey, url, init));
}

/** The shape of a typescript-fetch `Middleware` (its `pre` hook), so this file needs no generated code. */
export interface PreMiddleware {
  pre(context: { fetch: unknown; url: string; init: RequestInit }): Promise<{ url: string; init: RequestInit }>;
}

/** A typescript-fetch middleware: `new Configuration({ middleware: [vaultHmacMiddleware(id, key)] })`. */
export function vaultHmacMiddleware(partnerId: string, hmacKey: string): PreMiddleware {
  return {
    async pre(context) {
      return { url: context.url, init: await signRequest(partnerId, hmacKey, context.url, context.init) };
    },
  };
}
