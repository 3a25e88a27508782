// hermes console: live parts of a page. An element with data-live="URL" listens to that URL's
// server-sent events (EventSource): each message is the part's new rendering (escaped on the
// server), put in place unless the operator is typing in it (then once they leave it). The
// server sends "done" when the part is final; the stream is closed then.
"use strict";

function follow(element) {
  const source = new EventSource(element.dataset.live);
  let pending = null;

  function show(html) {
    const typing = element.contains(document.activeElement) && document.activeElement.tagName === "TEXTAREA";
    if (typing) {
      pending = html;
      return;
    }
    pending = null;
    element.innerHTML = html;
    element.dispatchEvent(new CustomEvent("hermes:refreshed", { bubbles: true }));
  }

  source.onmessage = (event) => show(event.data);
  source.addEventListener("done", () => {
    source.close();
    delete element.dataset.live;
  });
  source.onerror = () => {
    // a refused stream (403: signed out) closes it; a dropped one is retried by the browser
    if (source.readyState === EventSource.CLOSED) element.dataset.stale = "signed out";
  };
  element.addEventListener("focusout", () => {
    if (pending !== null) window.setTimeout(() => pending !== null && show(pending), 0);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(follow);
});
