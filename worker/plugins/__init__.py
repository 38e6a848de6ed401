"""The connector plugin API, the registry of installed plugins, and the checks a config passes."""
