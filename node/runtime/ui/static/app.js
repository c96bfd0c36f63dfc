// Floe web UI: the little script there is. The pages work without it;
// it refreshes a group's lag part every 2 s (pausable from the keyboard)
// and sizes the lag bars (inline styles are barred by the CSP).
(function () {
  "use strict";
  function sizeBars(root) {
    root.querySelectorAll(".bar[data-w]").forEach(function (b) {
      b.style.width = (Number(b.getAttribute("data-w")) || 0) * 0.8 + "px";
    });
  }
  function setup() {
    sizeBars(document);
    var region = document.getElementById("lag-region");
    if (!region) return;
    var url = region.getAttribute("data-refresh");
    var paused = false;
    function bindToggle() {
      var t = document.getElementById("refresh-toggle");
      if (!t) return;
      t.textContent = paused ? "Resume refresh" : "Pause refresh";
      t.setAttribute("aria-pressed", paused ? "false" : "true");
      t.onclick = function () { paused = !paused; bindToggle(); };
    }
    bindToggle();
    function tick() {
      if (paused) return;
      var ctl = new AbortController();
      var timer = setTimeout(function () { ctl.abort(); }, 5000);
      fetch(url, { credentials: "same-origin", signal: ctl.signal }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      }).then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("lag-region");
        var cur = document.getElementById("lag-region");
        if (fresh && cur) {
          var focused = document.activeElement && document.activeElement.id;
          cur.replaceWith(fresh);
          sizeBars(fresh);
          bindToggle();
          if (focused) { var el = document.getElementById(focused); if (el) el.focus(); }
        }
      }).catch(function () { /* next tick retries */ }).finally(function () { clearTimeout(timer); });
    }
    setInterval(tick, 2000);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
