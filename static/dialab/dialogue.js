// One switch for every private panel ("p"), and j / k to walk the list this page came from.
(function () {
  // The switch is there only where a teacher spoke (dialogue_detail.html); j / k work anyway.
  const toggle = document.getElementById("show-private");
  const panels = () => document.querySelectorAll("details.private-context");
  if (toggle) {
    document.getElementById("private-toggle").hidden = false;
    toggle.addEventListener("change", function () {
      panels().forEach(function (panel) { panel.open = toggle.checked; });
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    const target = event.target;
    if (target.closest && target.closest("textarea, select, [contenteditable], input:not([type=checkbox])")) return;
    if (event.key === "p" && toggle) {
      toggle.checked = !toggle.checked;
      toggle.dispatchEvent(new Event("change"));
    } else if (event.key === "j" || event.key === "k") {
      const link = document.getElementById(event.key === "j" ? "next-dialogue" : "previous-dialogue");
      if (link) link.click();
    }
  });
})();
