// Errors while the page loads are kept on the page itself, so a reader (or
// a test) can see that every chart was drawn.
window.reportErrors = [];
window.addEventListener("error", function (e) {
  window.reportErrors.push(String(e.message));
  document.documentElement.setAttribute("data-report-errors", window.reportErrors.join(" | "));
});
