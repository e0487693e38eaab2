"""Weekly drift reports: assemble (data), plot (plots), render (render) and store (table) them."""
