/* A C program of another project on the installed C API: a 3x3 convolution
 * of ones, whose centre output is C*9 and corner (zero padding) C*4. */
#include "ConvLower-c/ConvLower.h"

#include <stdio.h>

int main(void) {
  ConvLowerConvDesc d;
  convlowerConvDescInit(&d);
  d.inChannels = 2, d.outChannels = 3;
  d.inputSize[0] = d.inputSize[1] = 5;
  d.kernelSize[0] = d.kernelSize[1] = 3;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.target = ConvLowerTargetCpu;
  ConvLowerConv conv;
  if (convlowerConvCreate(&d, &conv, NULL) != ConvLowerStatusOk) {
    printf("create failed: %s\n", convlowerGetLastErrorMessage());
    return 1;
  }
  float x[50], w[54], y[75];
  for (int i = 0; i < 50; ++i)
    x[i] = 1;
  for (int i = 0; i < 54; ++i)
    w[i] = 1;
  if (convlowerConvRun(conv, x, w, NULL, y) != ConvLowerStatusOk) {
    printf("run failed: %s\n", convlowerGetLastErrorMessage());
    return 1;
  }
  printf("consumer-capi: centre %g corner %g\n", y[12], y[0]);
  convlowerConvDestroy(conv);
  return 0;
}
