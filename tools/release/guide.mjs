export async function runGuide() { return { results: [] }; }
