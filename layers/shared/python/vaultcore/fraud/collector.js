/*
 * Device collection script, served at {collector_url}/cdn/cs/<client_id>.js (spec "Fraud scoring").
 *
 *   <script id="bcn" dvc="a" dvct="800" dvci="<new GUID per page load>" sid="<session id>"
 *           src="{collector_url}/cdn/cs/<client_id>.js"></script>
 *
 * Reads its own tag (id=bcn, or the script element currently running), gathers device signals (user agent,
 * languages, time zone, screen, platform, a canvas hash where available), and POSTs them once per page load
 * to <script src without ".js">/collect as text/plain JSON (a CORS "simple" request: no preflight). dvct
 * bounds, in milliseconds, the time given to the slower signals (the canvas hash); dvc="a" collects all.
 * No cookies, no storage, no card data: the page's form fields are never read.
 *
 * When done it sets window.bcnResult = {dvci, status} and dispatches a "bcn:collected" event on document.
 */
(function () {
  "use strict";
  var tag = document.getElementById("bcn") || document.currentScript;
  if (!tag || !tag.src) { return; }
  var attr = function (name) { var v = tag.getAttribute(name); return v === null ? "" : String(v); };
  var dvci = attr("dvci"), sid = attr("sid"), mode = attr("dvc") || "a";
  var timeout = parseInt(attr("dvct"), 10);
  if (!(timeout > 0)) { timeout = 1000; }
  if (timeout > 10000) { timeout = 10000; }
  var endpoint = tag.src.split("?")[0].replace(/\.js$/, "") + "/collect";
  var pid = Math.random().toString(36).slice(2) + Date.now().toString(36);

  function fnv1a(text) {  // 32-bit FNV-1a, hex: a stable fingerprint where SubtleCrypto is unavailable
    var h = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = (h + ((h << 1) + (h << 4) + (h << 7) + (h << 8) + (h << 24))) >>> 0;
    }
    return ("0000000" + h.toString(16)).slice(-8);
  }

  function sha256Hex(text) {
    try {
      if (window.crypto && window.crypto.subtle && window.TextEncoder) {
        return window.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)).then(function (buf) {
          var bytes = new Uint8Array(buf), out = "";
          for (var i = 0; i < bytes.length; i++) { out += ("0" + bytes[i].toString(16)).slice(-2); }
          return out;
        }, function () { return fnv1a(text); });
      }
    } catch (e) { /* fall through */ }
    return Promise.resolve(fnv1a(text));
  }

  function canvasHash() {
    try {
      var c = document.createElement("canvas");
      c.width = 240; c.height = 60;
      var ctx = c.getContext && c.getContext("2d");
      if (!ctx) { return Promise.resolve(""); }
      ctx.textBaseline = "top";
      ctx.font = "16px 'Arial'";
      ctx.fillStyle = "#f60"; ctx.fillRect(100, 1, 62, 20);
      ctx.fillStyle = "#069"; ctx.fillText("bcn device \u263a 1.0", 2, 15);
      ctx.fillStyle = "rgba(102, 204, 0, 0.7)"; ctx.fillText("bcn device \u263a 1.0", 4, 17);
      return sha256Hex(c.toDataURL());
    } catch (e) {
      return Promise.resolve("");
    }
  }

  function timeZone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  function basics() {
    var nav = window.navigator || {}, scr = window.screen || {};
    return {
      userAgent: String(nav.userAgent || "").slice(0, 512),
      languages: (nav.languages && nav.languages.length ? Array.prototype.slice.call(nav.languages, 0, 10)
                                                         : [nav.language || ""]).map(String),
      timeZone: timeZone(),
      tzOffset: -new Date().getTimezoneOffset(),
      screen: {width: scr.width || 0, height: scr.height || 0, colorDepth: scr.colorDepth || 0,
               pixelRatio: window.devicePixelRatio || 1},
      platform: String(nav.platform || "").slice(0, 64),
      hardwareConcurrency: nav.hardwareConcurrency || 0,
      cookieEnabled: !!nav.cookieEnabled,
      webdriver: !!nav.webdriver
    };
  }

  function withTimeout(promise, ms, fallback) {
    return new Promise(function (resolve) {
      var done = false;
      var timer = setTimeout(function () { if (!done) { done = true; resolve(fallback); } }, ms);
      promise.then(function (v) { if (!done) { done = true; clearTimeout(timer); resolve(v); } },
                   function () { if (!done) { done = true; clearTimeout(timer); resolve(fallback); } });
    });
  }

  function finish(status) {
    window.bcnResult = {dvci: dvci, status: status};
    try { document.dispatchEvent(new CustomEvent("bcn:collected", {detail: window.bcnResult})); } catch (e) { }
  }

  if (!dvci) { finish("no-dvci"); return; }
  var signals = basics();
  var slow = mode === "a" ? withTimeout(canvasHash(), timeout, "") : Promise.resolve("");
  slow.then(function (hash) {
    signals.canvasHash = hash;
    var body = JSON.stringify({dvci: dvci, sid: sid, pid: pid, dvc: mode, signals: signals});
    if (window.fetch) {
      return fetch(endpoint, {method: "POST", mode: "cors", credentials: "omit", keepalive: true,
                              headers: {"Content-Type": "text/plain"}, body: body})
        .then(function (r) { finish(r.ok ? "sent" : "refused"); }, function () { finish("error"); });
    }
    if (navigator.sendBeacon && navigator.sendBeacon(endpoint, body)) { finish("sent"); return; }
    finish("unsupported");
  });
})();
