// hermes console: live parts of a page. An element with data-live="URL" is fetched again every
// POLL_MS and its content replaced by the server's rendering (escaped there) when it changed,
// unless the operator is typing in it. The server says when a part is final (X-Hermes-Live: done).
"use strict";

const POLL_MS = 2000;

function follow(element) {
  const url = element.dataset.live;
  let last = element.innerHTML;

  async function refresh() {
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (response.status === 403) {
        element.dataset.stale = "signed out";
        return;
      }
      if (response.ok) {
        const html = await response.text();
        const typing = element.contains(document.activeElement) && document.activeElement.tagName === "TEXTAREA";
        if (html !== last && !typing) {
          element.innerHTML = html;
          last = html;
          element.dispatchEvent(new CustomEvent("hermes:refreshed", { bubbles: true }));
        }
        if (response.headers.get("X-Hermes-Live") === "done") {
          delete element.dataset.live;
          return;
        }
      }
    } catch (error) {
      element.dataset.stale = String(error);
    }
    window.setTimeout(refresh, POLL_MS);
  }

  window.setTimeout(refresh, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(follow);
});
