/*
 * VaultCheckout: the payment iFrame's client library, served at {gateway_url}/iframe/v1/checkout.js.
 *
 *   <div id="payment"></div>
 *   <script src="{gateway_url}/iframe/v1/checkout.js"></script>
 *   const checkout = VaultCheckout.mount("#payment", {bearerToken, onReady, onChange, onError, style});
 *   const result = await checkout.submit();   // {eToken, customId, paymentMethod, card|bank, antiFraud?}
 *
 * The card and bank fields live in an iframe of the platform's origin; this page never sees their values.
 * Messages go to the platform's origin only and are accepted only from it (and from our own iframe window).
 * No dependency, no cookie, no storage. See docs/integrators/iframe.md.
 */
(function (global) {
  "use strict";
  var script = document.currentScript;
  var src = script && script.src ? script.src : "";
  var base = src.replace(/\/checkout\.js(\?.*)?$/, "");
  var platformOrigin = "";
  try { platformOrigin = new URL(src).origin; } catch (e) { platformOrigin = ""; }
  var STYLE_KEYS = ["color", "backgroundColor", "labelColor", "borderColor", "focusColor", "errorColor",
                    "fontFamily", "fontSize", "borderRadius", "padding"];

  function noop() {}

  function mount(target, options) {
    options = options || {};
    var onReady = options.onReady || noop, onChange = options.onChange || noop, onError = options.onError || noop;
    var container = typeof target === "string" ? document.querySelector(target) : target;
    if (!container || typeof options.bearerToken !== "string" || !options.bearerToken || !platformOrigin) {
      setTimeout(function () { onError({code: "BAD_OPTIONS", message: "mount needs a container and a bearerToken"}); }, 0);
      return {submit: function () { return Promise.reject({code: "BAD_OPTIONS"}); }, unmount: noop};
    }
    var style = {};
    if (options.style && typeof options.style === "object") {
      for (var i = 0; i < STYLE_KEYS.length; i++) {
        var k = STYLE_KEYS[i];
        if (typeof options.style[k] === "string") { style[k] = options.style[k]; }
      }
    }
    var frame = document.createElement("iframe");
    var query = "token=" + encodeURIComponent(options.bearerToken) + "&origin=" + encodeURIComponent(location.origin);
    if (Object.keys(style).length) { query += "&style=" + encodeURIComponent(JSON.stringify(style)); }
    frame.src = base + "/frame?" + query;
    frame.title = options.title || "Secure payment form";
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.style.width = "100%";
    frame.style.border = "0";
    frame.style.height = "240px";
    var state = {ready: false, failed: false, pending: {}, next: 1};
    var timeout = setTimeout(function () {
      if (!state.ready && !state.failed) {
        state.failed = true;
        onError({code: "FRAME_TIMEOUT", message: "The payment form did not load (refused or unreachable)."});
      }
    }, options.loadTimeoutMs > 0 ? options.loadTimeoutMs : 10000);

    function listener(event) {
      if (event.origin !== platformOrigin || event.source !== frame.contentWindow) { return; }
      var data = event.data;
      if (!data || data.vault !== "checkout" || typeof data.type !== "string") { return; }
      if (data.type === "ready") {
        state.ready = true;
        clearTimeout(timeout);
        if (data.height) { frame.style.height = data.height + "px"; }
        onReady({paymentMethods: data.methods});
      } else if (data.type === "resize" && data.height) {
        frame.style.height = data.height + "px";
      } else if (data.type === "change") {
        onChange({paymentMethod: data.paymentMethod, complete: data.complete, brand: data.brand, fields: data.fields});
      } else if (data.type === "error") {
        state.failed = true;
        clearTimeout(timeout);
        onError({code: data.code, message: data.message});
      } else if (data.type === "result" && state.pending[data.id]) {
        var p = state.pending[data.id];
        delete state.pending[data.id];
        if (data.ok) { p.resolve(data.result); } else {
          if (data.error && data.error.code === "SUBMISSION_LIMIT") { onError(data.error); }
          p.reject(data.error);
        }
      }
    }
    global.addEventListener("message", listener);
    container.appendChild(frame);

    return {
      submit: function () {
        return new Promise(function (resolve, reject) {
          if (!state.ready) { reject({code: state.failed ? "TOKEN_INVALID" : "FRAME_TIMEOUT", message: "not ready"}); return; }
          var id = state.next++;
          state.pending[id] = {resolve: resolve, reject: reject};
          frame.contentWindow.postMessage({vault: "checkout", type: "submit", id: id}, platformOrigin);
        });
      },
      unmount: function () {
        global.removeEventListener("message", listener);
        clearTimeout(timeout);
        if (frame.parentNode) { frame.parentNode.removeChild(frame); }
      }
    };
  }

  global.VaultCheckout = {mount: mount, version: "1"};
})(window);
