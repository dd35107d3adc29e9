// Keyboard-first labelling. Every answer is POSTed as it is given, with a nonce made once per
// answer: a retry after a dropped connection resends the same nonce, so the server records the
// change once. Saves of one question go out in order; a newer answer supersedes a retrying one.
(function () {
  const root = document.getElementById("labelling");
  if (!root) return;
  const csrf = document.querySelector("[name=csrfmiddlewaretoken]").value;
  const stops = Array.from(root.querySelectorAll(".stop[data-labelable]"));
  const questions = Array.from(root.querySelectorAll("form.question"));
  const status = document.getElementById("save-status");
  const help = document.getElementById("help-overlay");
  const refusal = document.getElementById("submit-refusal");
  const submitForm = document.getElementById("submit-form");
  const skipForm = document.getElementById("skip-form");
  const skipReason = document.getElementById("skip-reason");
  let current = 0;
  let focused = null;
  let pending = 0;
  let failing = 0;

  function nonce() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  function showStatus() {
    status.textContent = failing ? "retrying…" : pending ? "saving…" : "saved";
    status.dataset.state = failing ? "retrying" : pending ? "saving" : "saved";
  }

  function setState(form, state) {
    form.dataset.state = state;
    form.querySelector(".save-state").textContent =
      { saving: "saving…", saved: "saved", retrying: "retrying…", error: "not saved" }[state] || "";
  }

  function send(form, body, seq) {
    return new Promise(function (resolve) {
      let delay = 500;
      let retrying = false;
      function attempt() {
        if (seq !== form._seq && form.dataset.state !== "error") {
          // A newer answer to this question is queued: it carries the latest value.
          if (retrying) failing -= 1;
          pending -= 1; showStatus(); resolve(); return;
        }
        fetch(root.dataset.answerUrl, {
          method: "POST", body: body, credentials: "same-origin",
          headers: { "X-CSRFToken": csrf, "HX-Request": "true", Accept: "application/json" },
        }).then(function (response) {
          if (response.status >= 500) throw new Error("server " + response.status);
          if (retrying) failing -= 1;
          pending -= 1;
          setState(form, response.ok ? "saved" : "error");
          if (response.ok) markAnswered(form);
          showStatus(); resolve();
        }).catch(function () {
          if (!retrying) { retrying = true; failing += 1; }
          setState(form, "retrying"); showStatus();
          setTimeout(attempt, delay);
          delay = Math.min(delay * 2, 8000);
        });
      }
      attempt();
    });
  }

  // A saved answer is the annotator's: no longer a suggestion, nor unanswered. (A cleared
  // text box stays unanswered for the server; it says so if the item is submitted.)
  function markAnswered(form) {
    form.classList.add("answered");
    form.classList.remove("prefilled", "unanswered");
    form.removeAttribute("aria-invalid");
  }

  // confirmed: the suggestion the annotator confirmed (stored as such), or undefined.
  function save(form, confirmed) {
    const body = new FormData(form);
    const text = form.querySelector("textarea");
    if (text) form._sentText = text.value;
    body.set("nonce", nonce());
    if (confirmed !== undefined) body.set("confirm", confirmed);
    if (form.dataset.kind === "multiple_choice" && !body.getAll("value").length) body.append("value", "");
    form._seq = (form._seq || 0) + 1;
    const seq = form._seq;
    pending += 1; setState(form, "saving"); showStatus();
    form._chain = (form._chain || Promise.resolve()).then(function () { return send(form, body, seq); });
    return form._chain;
  }

  function settled() {
    return Promise.all(questions.map(function (form) { return form._chain || Promise.resolve(); }));
  }

  questions.forEach(function (form) {
    const text = form.querySelector("textarea");
    form.addEventListener("change", function (event) {
      // Leaving a text box fires its change: nothing to send if the pause in typing sent it.
      if (event.target === text && text.value === form._sentText) return;
      save(form);
    });
    if (text) {
      let timer = null;
      text.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () { save(form); }, 700);
      });
      text.addEventListener("change", function () { clearTimeout(timer); });
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const button = event.submitter;
      if (button && button.name === "confirm") confirmSuggestion(form);
      else save(form);
    });
    form.addEventListener("focusin", function () { focusQuestion(form, false); });
  });

  // A suggestion (the leak detector's) is only shown; confirming it (its button, or c) makes it
  // the annotator's answer.
  function confirmSuggestion(form) {
    const suggested = form.dataset.suggestion;
    if (!suggested || !form.classList.contains("prefilled")) return;
    const input = form.querySelector("input[name=value][value='" + suggested + "']");
    if (input) input.checked = true;
    save(form, suggested);
  }

  function stopOf(form) { return stops.indexOf(form.closest(".stop")); }

  function focusQuestion(form, move) {
    if (focused) focused.classList.remove("focused");
    focused = form;
    if (!form) return;
    form.classList.add("focused");
    setStop(stopOf(form), false);
    if (move) {
      const text = form.querySelector("textarea");
      (text || form).focus({ preventScroll: true });
      form.scrollIntoView({ block: "nearest" });
    }
  }

  function setStop(index, focusFirst) {
    if (!stops.length) return;
    current = Math.max(0, Math.min(index, stops.length - 1));
    stops.forEach(function (stop, i) { stop.classList.toggle("current", i === current); });
    const stop = stops[current];
    if (focusFirst) {
      // A turn taller than most of the window is shown from its top (its questions are
      // there), below the sticky toolbar; a shorter one in the middle.
      const tall = stop.getBoundingClientRect().height > 0.6 * window.innerHeight;
      stop.scrollIntoView({ block: tall ? "start" : "center" });
      // The stop's first question is chosen with the question itself focused, never its text
      // box: keys are shortcuts until Tab enters the box.
      const first = stop.querySelector("form.question");
      if (first) {
        focusQuestion(first, false);
        first.focus({ preventScroll: true });
      }
    }
  }

  function choose(form, index) {
    const inputs = form.querySelectorAll("input[name=value]");
    const input = inputs[index];
    if (!input) return;
    if (input.type === "checkbox") input.checked = !input.checked;
    else if (input.checked && !form.classList.contains("prefilled")) return;
    else input.checked = true;
    save(form);
  }

  function moveQuestion(step) {
    // A free-text question chosen but not entered (on arrival, after j/k or Esc: its box not
    // focused, so the shortcuts work): Tab enters its box before going on.
    const text = focused && focused.querySelector("textarea");
    if (step > 0 && text && document.activeElement !== text) {
      text.focus({ preventScroll: true });
      return;
    }
    const index = focused ? questions.indexOf(focused) : -1;
    const next = questions[Math.max(0, Math.min(index + step, questions.length - 1))];
    if (next) focusQuestion(next, true);
  }

  function go(id) {
    const link = document.getElementById(id);
    if (link) settled().then(function () { window.location.href = link.href; });
  }

  // The server refuses an item with required questions unanswered, and names them: say so
  // next to the toolbar, mark them, and go to the first.
  function refuse(message, ids) {
    refusal.textContent = message;
    refusal.hidden = false;
    questions.forEach(function (form) {
      const missing = ids.indexOf(form.id) >= 0;
      form.classList.toggle("unanswered", missing);
      if (missing) form.setAttribute("aria-invalid", "true");
      else form.removeAttribute("aria-invalid");
    });
    focusUnanswered();
  }

  function focusUnanswered() {
    const first = root.querySelector("form.question.unanswered");
    if (!first) return false;
    focusQuestion(first, true);
    first.scrollIntoView({ block: "center" });
    return true;
  }

  let submitting = false;
  function submitItem() {
    if (submitting) return;
    submitting = true;
    status.textContent = "submitting…";
    settled().then(function () {
      return fetch(submitForm.action, {
        method: "POST", body: new FormData(submitForm), credentials: "same-origin",
        headers: { "X-CSRFToken": csrf, Accept: "application/json" },
      });
    }).then(function (response) {
      return response.json().then(function (data) { return { ok: response.ok, data: data }; });
    }).then(function (result) {
      if (result.ok && result.data.submitted) { window.location.href = result.data.next; return; }
      submitting = false; showStatus();
      refuse(result.data.error || "Not submitted.", result.data.unanswered || []);
    }).catch(function () {
      // No answer from the server: the plain form post says what happened.
      submitForm.submit();
    });
  }

  function skipItem() {
    skipReason.focus();
    skipReason.select();
  }

  submitForm.addEventListener("submit", function (event) { event.preventDefault(); submitItem(); });
  // The reason is required (the browser checks it before this runs); pending saves go first.
  skipForm.addEventListener("submit", function (event) {
    event.preventDefault();
    status.textContent = "saving…";
    settled().then(function () { skipForm.submit(); });
  });

  function togglePrivate() {
    const panels = document.querySelectorAll("details.private-context");
    const open = !Array.from(panels).some(function (panel) { return panel.open; });
    panels.forEach(function (panel) { panel.open = open; });
  }

  document.getElementById("help-button").addEventListener("click", function () { help.hidden = !help.hidden; });
  help.addEventListener("click", function (event) { if (event.target === help) help.hidden = true; });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const typing = event.target.closest && event.target.closest("textarea, input[type=text], select");
    if (key === "Tab") { event.preventDefault(); moveQuestion(event.shiftKey ? -1 : 1); return; }
    if (key === "Escape") {
      if (!help.hidden) help.hidden = true;
      else if (typing) { event.target.blur(); if (focused) focused.focus({ preventScroll: true }); }
      return;
    }
    if (typing) return;
    if (key === "?") { event.preventDefault(); help.hidden = !help.hidden; return; }
    if (!help.hidden) return;
    const kind = focused ? focused.dataset.kind : "";
    if (key === "j" || key === "ArrowDown") { event.preventDefault(); setStop(current + 1, true); }
    else if (key === "k" || key === "ArrowUp") { event.preventDefault(); setStop(current - 1, true); }
    else if (/^[1-9]$/.test(key) && focused && kind !== "yes_no" && kind !== "free_text") {
      event.preventDefault(); choose(focused, Number(key) - 1);
    } else if (key === "y" && kind === "yes_no") { event.preventDefault(); choose(focused, 0); }
    else if (key === "n" && kind === "yes_no") { event.preventDefault(); choose(focused, 1); }
    else if (key === "c" && focused && focused.classList.contains("prefilled")) {
      event.preventDefault(); confirmSuggestion(focused);
    }
    // Items move with ] and [ only: n is "no", and must never leave the page on a slip.
    else if (key === "]") { event.preventDefault(); go("next-item"); }
    else if (key === "[") { event.preventDefault(); go("previous-item"); }
    else if (key === "Enter") { event.preventDefault(); submitItem(); }
    else if (key === "s") { event.preventDefault(); skipItem(); }
    else if (key === "v") { event.preventDefault(); togglePrivate(); }
  });

  window.addEventListener("beforeunload", function (event) {
    if (pending) { event.preventDefault(); event.returnValue = ""; }
  });

  const start = stops.findIndex(function (stop) { return "#" + stop.id === window.location.hash; });
  setStop(start >= 0 ? start : 0, true);
  focusUnanswered();  // a submit refused without JavaScript's help marked them
  showStatus();
})();
