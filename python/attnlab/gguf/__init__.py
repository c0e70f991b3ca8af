"""The GGUF file format (writer, reader) and one module per schema: architecture string, keys, write, load."""
