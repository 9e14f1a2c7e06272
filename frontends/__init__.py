"""Ways into Lamina other than textual IR: the Python graph builder
(`lamina.frontends.builder`) and the ONNX importer (`lamina.frontends.onnx`)."""
