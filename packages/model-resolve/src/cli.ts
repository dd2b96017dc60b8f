export async function main(argv: string[]): Promise<void> {
  process.stderr.write('prun-model-resolve: not implemented yet (' + argv.length + ' args)\n');
  process.exitCode = 70;
}
