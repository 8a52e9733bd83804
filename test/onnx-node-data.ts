/** Where Debian's libonnx-testdata puts ONNX's backend node tests, and the ones left out on purpose. */
export const NODE_TESTS = '/usr/share/libonnx-testdata/data/node';

/** Node tests with supported operators that are not checked, each with its reason. */
export const EXCLUDED: ReadonlyMap<string, string> = new Map([
  ['test_castlike_BFLOAT16_to_FLOAT', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_BFLOAT16_to_FLOAT_expanded', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_FLOAT_to_BFLOAT16', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_castlike_FLOAT_to_BFLOAT16_expanded', 'its test data feeds `like` as [1] while the model declares [3, 4]'],
  ['test_cast_BFLOAT16_to_FLOAT', 'its reference tensors store bfloat16 as UINT16 bit patterns (ONNX 1.12 generator quirk)'],
  ['test_cast_FLOAT_to_BFLOAT16', 'its reference tensors store bfloat16 as UINT16 bit patterns (ONNX 1.12 generator quirk)'],
  ['test_identity_opt', 'optional-typed graph input: veltair compiles tensor graphs only'],
  ['test_identity_sequence', 'sequence-typed graph input: veltair compiles tensor graphs only'],
]);
