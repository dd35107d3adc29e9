// The address bar after htmx swaps: an address already shown is not pushed again.
//
// htmx pushes the address of every response that asks for it. Two requests for the same
// filters (a field's change event racing the delayed keystroke that fired first) would push it
// twice, and Back would then seem to do nothing. Compared here, when the history changes, rather
// than on the server, which cannot know what a request still in flight will have pushed.
document.addEventListener("htmx:beforeHistoryUpdate", function (event) {
  const update = event.detail.history;
  if (update.type === "push" && new URL(update.path, location.href).href === location.href) {
    update.type = "replace";
  }
});
