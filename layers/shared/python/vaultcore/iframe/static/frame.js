/*
 * The payment iFrame's own script (served at {gateway_url}/iframe/v1/frame.js, loaded by the iframe page with
 * its CSP nonce). Live validation (Luhn and brand, expiry, CVV length by brand, the ABA routing checksum),
 * aria-invalid and announced messages; the submission to the platform (same origin) with the bearer token.
 * Messages go to the verified parent origin only (never "*") and are accepted only from it.
 */
(function () {
  "use strict";
  var node = document.getElementById("vault-config");
  var config = node ? JSON.parse(node.textContent) : {error: "TOKEN_INVALID"};
  var parentOrigin = config.parentOrigin;
  var token = new URLSearchParams(location.search).get("token") || "";

  function post(message) {
    if (!parentOrigin || window.parent === window) { return; }
    message.vault = "checkout";
    window.parent.postMessage(message, parentOrigin);
  }

  if (config.error) {
    post({type: "error", code: config.error, message: config.error === "ORIGIN_NOT_ALLOWED"
      ? "This page's origin is not in the configuration's allowedParentDomains."
      : "The bearer token is unknown or expired."});
    return;
  }

  var TEXT = {
    en: {required: "Required.", cardNumber: "Enter a valid card number.", cardBrandLength: "The card number is incomplete.",
         cardExpiration: "Enter a date as MM/YY.", expired: "The card has expired.", cardCvv: "Enter the {n}-digit security code.",
         zip: "Enter a valid ZIP or postal code.", text: "Enter {min} to {max} characters.",
         bankRoutingNumber: "Enter a valid 9-digit routing number.", bankAccountNumber: "Enter 4 to 17 digits.",
         accountHolderName: "Enter the account holder's name.", brand: "Card brand: {b}",
         email: "Enter a valid email address.", phone: "Enter + and 6 to 16 digits.",
         done: "Payment details received.", failed: "The payment details were not accepted."},
    es: {required: "Obligatorio.", cardNumber: "Introduzca un número de tarjeta válido.",
         cardBrandLength: "El número de tarjeta está incompleto.", cardExpiration: "Introduzca la fecha como MM/AA.",
         expired: "La tarjeta ha vencido.", cardCvv: "Introduzca el código de seguridad de {n} dígitos.",
         zip: "Introduzca un código postal válido.", text: "Introduzca de {min} a {max} caracteres.",
         bankRoutingNumber: "Introduzca un número de ruta válido de 9 dígitos.", bankAccountNumber: "Introduzca de 4 a 17 dígitos.",
         accountHolderName: "Introduzca el nombre del titular.", brand: "Marca: {b}",
         email: "Introduzca un correo electrónico válido.", phone: "Introduzca + y de 6 a 16 dígitos.",
         done: "Datos de pago recibidos.", failed: "No se aceptaron los datos de pago."}
  };
  var T = TEXT[config.language] || TEXT.en;
  function t(key, vars) {
    var s = T[key] || key;
    for (var k in vars || {}) { s = s.replace("{" + k + "}", vars[k]); }
    return s;
  }

  // ------------------------------------------------------------------ rules
  function digits(v) { return v.replace(/[\s-]/g, ""); }
  function luhn(d) {
    var sum = 0, dbl = false;
    for (var i = d.length - 1; i >= 0; i--) {
      var n = d.charCodeAt(i) - 48;
      if (dbl) { n *= 2; if (n > 9) { n -= 9; } }
      sum += n; dbl = !dbl;
    }
    return sum % 10 === 0;
  }
  var BRANDS = [  // [prefix test, brand, lengths, cvv length]
    [/^62212[6-9]|^6221[3-9]|^622[2-8]|^6229[01]|^62292[0-5]|^6011|^64[4-9]|^65/, "DISCOVER", [16, 17, 18, 19], 3],
    [/^(222[1-9]|22[3-9]|2[3-6]|27[01]|2720)/, "MASTERCARD", [16], 3],
    [/^35(2[89]|[3-8])/, "JCB", [16, 17, 18, 19], 3],
    [/^(3095|30[0-5]|36|3[89])/, "DINERS CLUB", [14, 15, 16, 17, 18, 19], 3],
    [/^5[1-5]/, "MASTERCARD", [16], 3],
    [/^3[47]/, "AMERICAN EXPRESS", [15], 4],
    [/^4/, "VISA", [13, 16, 19], 3]
  ];
  function brandOf(d) {
    for (var i = 0; i < BRANDS.length; i++) { if (BRANDS[i][0].test(d)) { return BRANDS[i]; } }
    return null;
  }
  function aba(d) {
    if (!/^[0-9]{9}$/.test(d)) { return false; }
    var n = function (i) { return d.charCodeAt(i) - 48; };
    return (3 * (n(0) + n(3) + n(6)) + 7 * (n(1) + n(4) + n(7)) + (n(2) + n(5) + n(8))) % 10 === 0;
  }
  var LIMITS = {address1: [2, 100], address2: [1, 100], city: [1, 64], state: [1, 64], accountHolderName: [2, 100]};

  function settingOf(name) {
    if (name === "cardCvv") { return config.cardSettings.cvv; }
    if (name === "email") { return config.cardSettings.contactInfo; }
    if (name === "phone") { return "optional"; }
    var b = config.cardSettings.billingAddress;
    return b && b[name] ? b[name] : "required";
  }

  // a field's problem ("" when valid); empty optional fields are valid
  function check(name, raw) {
    var v = raw.trim();
    if (!v) { return settingOf(name) === "optional" ? "" : t("required"); }
    if (name === "cardNumber") {
      var d = digits(v);
      if (!/^[0-9]{13,19}$/.test(d) || !luhn(d)) { return t("cardNumber"); }
      var b = brandOf(d);
      if (b && b[2].indexOf(d.length) < 0) { return t("cardBrandLength"); }
      return "";
    }
    if (name === "cardExpiration") {
      var m = /^(0[1-9]|1[0-2])\/?([0-9]{2})$/.exec(v);
      if (!m) { return t("cardExpiration"); }
      var now = new Date(), year = 2000 + parseInt(m[2], 10), month = parseInt(m[1], 10);
      if (year < now.getUTCFullYear() || (year === now.getUTCFullYear() && month < now.getUTCMonth() + 1)) { return t("expired"); }
      if (year > now.getUTCFullYear() + 20) { return t("cardExpiration"); }
      return "";
    }
    if (name === "cardCvv") {
      var card = brandOf(digits(value("cardNumber")));
      var n = card ? card[3] : 3;
      return new RegExp("^[0-9]{" + n + "}$").test(v) ? "" : t("cardCvv", {n: n});
    }
    if (name === "zip") { return /^[A-Za-z0-9 -]{3,10}$/.test(v) ? "" : t("zip"); }
    if (name === "email") { return /^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{2,63}$/.test(v) ? "" : t("email"); }
    if (name === "phone") { return /^\+[0-9]{6,16}$/.test(v) ? "" : t("phone"); }
    if (name === "bankRoutingNumber") { return aba(v) ? "" : t("bankRoutingNumber"); }
    if (name === "bankAccountNumber") { return /^[0-9]{4,17}$/.test(v) ? "" : t("bankAccountNumber"); }
    var lim = LIMITS[name];
    if (lim && (v.length < lim[0] || v.length > lim[1])) {
      return name === "accountHolderName" ? t("accountHolderName") : t("text", {min: lim[0], max: lim[1]});
    }
    return "";
  }

  // ------------------------------------------------------------------ the form
  var form = document.getElementById("vault-form");
  var touched = {};
  function input(name) { return document.getElementById("f-" + name); }
  function value(name) { var el = input(name); return el ? el.value : ""; }
  function method() {
    var checked = form.querySelector("input[name=paymentMethod]:checked");
    return checked ? checked.value : config.methods[0];
  }
  function visibleFields() {
    var group = form.querySelector('.group[data-method="' + method() + '"]');
    return Array.prototype.map.call(group.querySelectorAll("input[type=text]"), function (el) { return el.name; });
  }
  function show(name, problem, announce) {
    var el = input(name), msg = document.getElementById("m-" + name);
    el.setAttribute("aria-invalid", problem ? "true" : "false");
    if (announce || !problem) { msg.textContent = problem; }
  }
  function state() {
    var fields = {}, complete = true;
    visibleFields().forEach(function (name) {
      var problem = check(name, value(name));
      fields[name] = {valid: !problem, empty: !value(name).trim()};
      if (problem) { complete = false; }
    });
    var b = brandOf(digits(value("cardNumber")));
    return {paymentMethod: method(), complete: complete, fields: fields, brand: method() === "CARD" && b ? b[1] : null};
  }
  function changed() {
    var s = state();
    var brand = document.getElementById("brand");
    if (brand) { brand.textContent = s.brand ? t("brand", {b: s.brand}) : ""; }
    post({type: "change", paymentMethod: s.paymentMethod, complete: s.complete, brand: s.brand, fields: s.fields});
  }

  form.addEventListener("input", function (e) {
    var name = e.target.name;
    if (!name || name === "paymentMethod") { return; }
    if (touched[name]) { show(name, check(name, e.target.value), false); }
    if (name === "cardNumber" && touched.cardCvv) { show("cardCvv", check("cardCvv", value("cardCvv")), false); }
    changed();
  });
  form.addEventListener("focusout", function (e) {
    var name = e.target.name;
    if (!name || name === "paymentMethod" || !e.target.value) { return; }
    touched[name] = true;
    show(name, check(name, e.target.value), true);
  });
  form.addEventListener("change", function (e) {
    if (e.target.name !== "paymentMethod") { return; }
    Array.prototype.forEach.call(form.querySelectorAll(".group"), function (g) {
      g.hidden = g.getAttribute("data-method") !== method();
    });
    resize();
    changed();
  });
  // Standalone (no allowedParentDomains: shown top-level by its instance, never framed): its own button submits,
  // and the merchant's server reads the result with GET .../instance/{id} (tokens).
  function done(message) { var el = document.getElementById("done"); if (el) { el.textContent = message; } }
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (config.standalone) { submit("standalone"); }
  });

  // ------------------------------------------------------------------ submission
  // antiFraud: the device collection script (id=bcn, loaded by the page) reports before the first submission,
  // or within 3 s; its device transaction id goes with the submission.
  var collected = !config.antiFraud ? Promise.resolve() : new Promise(function (resolve) {
    if (window.bcnResult) { resolve(); return; }
    document.addEventListener("bcn:collected", function () { resolve(); });
    setTimeout(resolve, 3000);
  });
  var CODES = {904: "TOKEN_INVALID", 905: "SUBMISSION_LIMIT"};
  function submit(id) {
    var problems = [];
    visibleFields().forEach(function (name) {
      var problem = check(name, value(name));
      touched[name] = true;
      show(name, problem, true);
      if (problem) { problems.push(name); }
    });
    if (problems.length) {
      input(problems[0]).focus();
      post({type: "result", id: id, ok: false, error: {code: "VALIDATION", fields: problems}});
      return;
    }
    var body = {paymentMethod: method()};
    visibleFields().forEach(function (name) {
      var v = value(name).trim();
      if (v) { body[name] = name === "cardNumber" ? digits(v) : v; }
    });
    if (config.antiFraud && config.deviceTransId) { body.deviceTransId = config.deviceTransId; }
    // savePaymentOption: required (a notice) saves, optional only when the shopper ticks the box
    var save = document.getElementById("f-save" + body.paymentMethod);
    if (save && (save.getAttribute("data-required") === "true" || save.checked)) { body.savePayment = true; }
    collected.then(function () {
      return fetch("submit", {method: "POST", credentials: "omit", cache: "no-store",
                              headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
                              body: JSON.stringify(body)});
    })
      .then(function (r) { return r.json().then(function (j) { return {status: r.status, body: j}; }); })
      .then(function (answer) {
        if (answer.status === 200) {
          ["cardNumber", "cardCvv", "bankAccountNumber"].forEach(function (n) { if (input(n)) { input(n).value = ""; } });
          post({type: "result", id: id, ok: true, result: answer.body});
          if (config.standalone) { done(t("done")); }
        } else {
          var code = CODES[answer.body.errCode] || "SUBMISSION_FAILED";
          post({type: "result", id: id, ok: false,
                error: {code: code, errCode: answer.body.errCode, message: answer.body.errMessage}});
          if (config.standalone) { done(t("failed")); }
        }
      }, function () {
        post({type: "result", id: id, ok: false, error: {code: "SUBMISSION_FAILED", message: "network error"}});
      });
  }

  window.addEventListener("message", function (event) {
    if (event.origin !== parentOrigin || event.source !== window.parent) { return; }
    var data = event.data;
    if (data && data.vault === "checkout" && data.type === "submit") { submit(data.id); }
  });

  function height() { return Math.ceil(document.documentElement.scrollHeight) + 4; }
  function resize() { post({type: "resize", height: height()}); }
  if (window.ResizeObserver) { new ResizeObserver(resize).observe(document.body); }
  post({type: "ready", methods: config.methods, height: height()});
  changed();
})();
