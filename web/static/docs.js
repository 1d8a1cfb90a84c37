// The API reference page (/docs): Swagger UI over bureau's OpenAPI document.
// "Authorize" takes an API token for "Try it out"; it is kept in this page
// only (not persisted). No request leaves for anywhere but this bureau.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    docExpansion: "list",
    filter: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    validatorUrl: null, // no badge from validator.swagger.io
  });
});
