"""The dashboard door: server-rendered pages for operators, with sign-in and CSRF."""
