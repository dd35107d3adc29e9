// A form with data-confirm="Question?" asks before it submits. The Content-Security-Policy
// refuses inline handlers (onsubmit="return confirm(...)"), so one listener serves every form.
document.addEventListener("submit", function (event) {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
