"""Google Gemini API adapter (provider "gemini", api "generate_content")."""
