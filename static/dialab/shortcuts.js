// Keyboard shortcuts for repeated authoring: Ctrl+Enter (Cmd+Enter on a Mac) submits the form
// that holds the focused field, through htmx when the form is an htmx form.
document.addEventListener("keydown", function (event) {
  if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
  const form = event.target.closest && event.target.closest("form");
  if (!form) return;
  event.preventDefault();
  form.requestSubmit();
});
