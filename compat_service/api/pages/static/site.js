// accelenv pages: a little plain JavaScript. Everything works without it (forms submit, all formats show);
// with it, a changed control reloads the page at its new URL (the URL is the state), format choice and
// copy buttons work in place.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // A changed control: go to the form's URL without empty fields (the canonical, shareable URL).
  function go(form) {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (String(value).trim() !== "") params.append(name, value);
    });
    var query = params.toString();
    window.location.assign(form.getAttribute("action") + (query ? "?" + query : ""));
  }
  document.querySelectorAll("form.selector, form.filters").forEach(function (form) {
    form.addEventListener("change", function (event) {
      if (event.target.matches("select, input[type=checkbox]")) go(form);
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); go(form); });
    // text fields apply on Enter or when they lose focus with a new value
    form.querySelectorAll("input:not([type]), input[type=text]").forEach(function (input) {
      var before = input.value;
      input.addEventListener("blur", function () { if (input.value !== before) go(form); });
    });
  });

  // Install format: show the chosen one and keep it in the URL (replaceState: no new history entry).
  var formats = document.getElementById("formats");
  if (formats) {
    formats.addEventListener("change", function (event) {
      var chosen = event.target.value;
      document.querySelectorAll(".install").forEach(function (block) {
        if (block.dataset.format === chosen) block.removeAttribute("data-inactive");
        else block.setAttribute("data-inactive", "");
      });
      var url = new URL(window.location.href);
      if (chosen === "pip") url.searchParams.delete("format"); else url.searchParams.set("format", chosen);
      history.replaceState(null, "", url);
      var hidden = document.querySelector("form.selector input[name=format]");
      if (hidden) hidden.value = chosen;
    });
  }

  // Copy buttons: the clipboard API where the page is a secure context, a selected textarea otherwise.
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "absolute";
    area.style.left = "-9999px";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      var text = document.getElementById(button.dataset.copy).innerText;
      var status = button.nextElementSibling;
      var copy = navigator.clipboard && window.isSecureContext
        ? navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); })
        : fallbackCopy(text);
      copy.then(function () { status.textContent = "Copied"; },
                function () { status.textContent = "Copy failed: select the text and copy it"; });
    });
  });
})();
