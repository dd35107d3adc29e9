// The Export link takes the filters the list shows now: htmx filtering updates the address bar
// but not the link's href, which the page wrote for the filters it was first loaded with.
document.addEventListener("click", function (event) {
  const link = event.target.closest && event.target.closest("#export-link");
  if (link) link.search = window.location.search;
});
