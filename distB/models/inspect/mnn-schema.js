// The few fields of MNN's model schema (schema/default/*.fbs in MNN) that the inspector reads, as FlatBuffers
// field ids: the declaration order in the .fbs, where a union takes two ids (its type tag, then its value).
// Written by hand from the .fbs for exactly these fields; MNN's generated code is not used.
export const NetField = {
    bizCode: 0,
    extraTensorDescribe: 1,
    oplists: 3,
    outputName: 4,
    sourceType: 6,
    tensorName: 7,
    subgraphs: 10,
    mnnUuid: 11,
};
export const OpField = {
    inputIndexes: 0,
    mainType: 1,
    main: 2,
    name: 3,
    outputIndexes: 4,
    type: 5,
    externalPath: 7,
};
export const SubGraphField = { name: 0, inputs: 1, outputs: 2, tensors: 3, nodes: 4 };
export const TensorDescribeField = { blob: 0, index: 1, name: 2 };
/** Input { dims:[int]; dtype:DataType = DT_FLOAT; dformat:MNN_DATA_FORMAT = NC4HW4 } */
export const InputField = { dims: 0, dtype: 1, dformat: 2 };
/** Blob { dims; dataFormat; dataType; uint8s; int8s; int32s; int64s; float32s; strings; external } */
export const BlobField = { dims: 0, dataType: 2, external: 9 };
/** Convolution2D { common; weight; bias; quanParameter; symmetricQuan; sparseParameter; external } */
export const Convolution2DField = { common: 0, quanParameter: 3, external: 6 };
/** Convolution2DCommon { padX; padY; kernelX; kernelY; strideX; strideY; dilateX; dilateY; padMode; group;
 *  outputCount; inputCount; … } */
export const Convolution2DCommonField = { outputCount: 10, inputCount: 11 };
/** LayerNorm { axis; epsilon; gamma; beta; group; external; useRMSNorm } */
export const LayerNormField = { external: 5 };
/** IDSTQuan { buffer; alpha; type; useInt32; quantScale; scaleIn; scaleOut; aMaxOrBits; aMin; readType; … }
 *  For weight-only quantisation, aMaxOrBits holds the bit width and readType the number of scale groups
 *  (output channels × blocks per channel). */
export const IdstQuanField = { type: 2, aMaxOrBits: 7, readType: 9 };
export const DATA_TYPE_NAMES = {
    0: 'invalid',
    1: 'float32',
    2: 'float64',
    3: 'int32',
    4: 'uint8',
    5: 'int16',
    6: 'int8',
    7: 'string',
    8: 'complex64',
    9: 'int64',
    10: 'bool',
    11: 'qint8',
    12: 'quint8',
    13: 'qint32',
    14: 'bfloat16',
    15: 'qint16',
    16: 'quint16',
    17: 'uint16',
    18: 'complex128',
    19: 'float16',
};
export const DATA_FORMAT_NAMES = {
    0: 'NCHW',
    1: 'NHWC',
    2: 'NC4HW4',
    3: 'NHWC4',
    4: 'UNKNOWN',
};
export const NET_SOURCE_NAMES = {
    0: 'CAFFE',
    1: 'TENSORFLOW',
    2: 'TFLITE',
    3: 'ONNX',
    4: 'TORCH',
};
//# sourceMappingURL=mnn-schema.js.map