// duradyn console: folds and unfolds payloads, and refreshes the page's
// main part in place while auto-refresh is on. No inline script runs: the
// Content-Security-Policy allows this file only.
(function () {
  'use strict';

  function setAll(open) {
    document.querySelectorAll('details.payload').forEach(function (d) { d.open = open; });
  }

  document.addEventListener('click', function (ev) {
    var b = ev.target.closest ? ev.target.closest('[data-fold]') : null;
    if (b) {
      setAll(b.getAttribute('data-fold') === 'open');
    }
  });

  var ms = parseInt(document.body.getAttribute('data-refresh-ms') || '0', 10);
  var box = document.getElementById('auto-refresh');
  if (!ms || !box) {
    return;
  }
  var key = 'duradyn-console-refresh';
  try {
    box.checked = window.localStorage.getItem(key) !== 'off';
  } catch (e) { /* storage unavailable: keep the default */ }
  box.addEventListener('change', function () {
    try { window.localStorage.setItem(key, box.checked ? 'on' : 'off'); } catch (e) { /* ignore */ }
  });

  var busy = false;
  function editing() {
    var a = document.activeElement;
    return a && a.closest && a.closest('form') !== null && a.tagName !== 'BUTTON';
  }

  function refresh() {
    if (!box.checked || busy || document.hidden || editing()) {
      return;
    }
    busy = true;
    fetch(window.location.href, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var fresh = doc.getElementById('main');
        var cur = document.getElementById('main');
        if (!fresh || !cur) {
          return;
        }
        var open = {};
        cur.querySelectorAll('details[id]').forEach(function (d) { open[d.id] = d.open; });
        fresh = document.adoptNode(fresh);
        fresh.querySelectorAll('details[id]').forEach(function (d) {
          if (Object.prototype.hasOwnProperty.call(open, d.id)) {
            d.open = open[d.id];
          }
        });
        // An unchanged page is left alone: replacing it would drop a
        // click in progress and the reader's selection for nothing.
        if (fresh.innerHTML !== cur.innerHTML) {
          cur.replaceWith(fresh);
        }
      })
      .catch(function () { /* the next tick tries again */ })
      .then(function () { busy = false; });
  }

  window.setInterval(refresh, ms);
})();
