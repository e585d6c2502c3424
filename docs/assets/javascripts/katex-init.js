// Typeset the \( \) and \[ \] spans that pymdownx.arithmatex (generic mode)
// leaves in the page, with the KaTeX files shipped in docs/assets/katex (no CDN).
// Notebook pages (mkdocs-jupyter) keep Jupyter's $...$ delimiters.
document$.subscribe(({ body }) => {
  const delimiters = [
    { left: "$$", right: "$$", display: true },
    { left: "\\(", right: "\\)", display: false },
    { left: "\\[", right: "\\]", display: true },
  ];
  if (body.querySelector(".jupyter-wrapper")) {
    delimiters.push({ left: "$", right: "$", display: false });
  }
  renderMathInElement(body, { delimiters, throwOnError: false });
});
